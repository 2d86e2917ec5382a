package main

// Every event and answer is one JSON object on a line of stdout, for the
// shell tests to read with grep or python3.

import (
	"encoding/json"
	"os"
	"sync"
)

var outMu sync.Mutex

// emit prints one event: "event" is its kind, the rest its fields.
func emit(kind string, fields map[string]interface{}) {
	obj := map[string]interface{}{"event": kind}
	for k, v := range fields {
		obj[k] = v
	}
	b, err := json.Marshal(obj)
	if err != nil {
		b, _ = json.Marshal(map[string]interface{}{"event": "error", "error": err.Error()})
	}
	outMu.Lock()
	defer outMu.Unlock()
	os.Stdout.Write(append(b, '\n'))
}

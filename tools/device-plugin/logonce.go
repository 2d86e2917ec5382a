package main

// Logging a condition once per change, not once per poll.

import (
	"fmt"
	"log"
	"sync"
)

type logOnce struct {
	mu   sync.Mutex
	last map[string]string
}

func newLogOnce() *logOnce { return &logOnce{last: map[string]string{}} }

// say logs the message under key unless it is what key said last; it
// returns whether it logged.
func (l *logOnce) say(key, format string, args ...interface{}) bool {
	msg := fmt.Sprintf(format, args...)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last[key] == msg {
		return false
	}
	l.last[key] = msg
	log.Print(msg)
	return true
}

// forget lets key's next message be logged, whatever it is.
func (l *logOnce) forget(key string) {
	l.mu.Lock()
	delete(l.last, key)
	l.mu.Unlock()
}

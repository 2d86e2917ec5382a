#!/usr/bin/env python3
"""Validates a CDI spec (YAML, as vgpu-setup cdi writes it) against
test/setup/cdi-schema.json, with Debian's python3-jsonschema and
python3-yaml.

    validate_cdi.py SCHEMA SPEC

Then checks that the schema is no rubber stamp: variants of the spec that
break one rule each must be refused, and variants that a runtime accepts
must pass.  Prints what failed; exits 1 if anything did."""
import copy
import json
import sys

import jsonschema
import yaml


def main():
    schema_path, spec_path = sys.argv[1:3]
    with open(schema_path) as f:
        schema = json.load(f)
    jsonschema.Draft7Validator.check_schema(schema)
    validator = jsonschema.Draft7Validator(schema)
    with open(spec_path) as f:
        spec = yaml.safe_load(f)

    problems = [f"{spec_path}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
                for e in validator.iter_errors(spec)]

    def variant(change):
        s = copy.deepcopy(spec)
        change(s)
        return s

    def set_(path, value):
        def change(s):
            *parents, last = path
            for p in parents:
                s = s[p]
            s[last] = value
        return change

    def both(*changes):
        def change(s):
            for c in changes:
                c(s)
        return change

    node0 = ["devices", 0, "containerEdits", "deviceNodes", 0]
    refused = {
        "a kind without a vendor prefix": set_(["kind"], "vgpu"),
        "a kind with two slashes": set_(["kind"], "vgpu.dev/vgpu/x"),
        "a kind whose name ends with a dash": set_(["kind"], "vgpu.dev/vgpu-"),
        "an unreleased cdiVersion": set_(["cdiVersion"], "0.5"),
        "a device name beginning with a dash": set_(["devices", 0, "name"], "-train"),
        "a device name with a slash": set_(["devices", 0, "name"], "a/b"),
        "no devices": set_(["devices"], []),
        "a device without edits": set_(["devices", 0, "containerEdits"], {}),
        "an unknown field in containerEdits": set_(["containerEdits", "envs"], ["A=1"]),
        "an unknown top-level field": set_(["vendor"], "vgpu"),
        "an env entry without '='": set_(["containerEdits", "env"], ["LD_PRELOAD"]),
        "an env entry with an empty name": set_(["containerEdits", "env"], ["=x"]),
        "a device node without a path": set_(node0, {"type": "c"}),
        "a device node of an unknown type": set_(node0 + ["type"], "x"),
        "a mount without a containerPath": set_(["containerEdits", "mounts", 0], {"hostPath": "/x"}),
        "mount options that are not a list": set_(["containerEdits", "mounts", 0, "options"], "ro"),
        "a hook with a relative path": set_(["containerEdits", "hooks"],
                                            [{"hookName": "createContainer", "path": "bin/x"}]),
        "hostPath in a device node at 0.4.0": both(set_(["cdiVersion"], "0.4.0"),
                                                   set_(node0 + ["hostPath"], "/dev/nvidia0")),
        "a device name beginning with a digit at 0.4.0": both(set_(["cdiVersion"], "0.4.0"),
                                                              set_(["devices", 0, "name"], "0train")),
        "annotations at 0.5.0": set_(["annotations"], {"a": "b"}),
        "additionalGids at 0.6.0": both(set_(["cdiVersion"], "0.6.0"),
                                        set_(["containerEdits", "additionalGids"], [44])),
        "netDevices at 1.0.0": both(set_(["cdiVersion"], "1.0.0"),
                                    set_(["containerEdits", "netDevices"],
                                         [{"hostInterfaceName": "eth1", "name": "eth0"}])),
    }
    accepted = {
        "hostPath in a device node at 0.5.0": set_(node0 + ["hostPath"], "/dev/nvidia0"),
        "a device name beginning with a digit at 0.5.0": set_(["devices", 0, "name"], "0train"),
        "annotations at 0.6.0": both(set_(["cdiVersion"], "0.6.0"), set_(["annotations"], {"a": "b"})),
        "netDevices at 1.1.0": both(set_(["cdiVersion"], "1.1.0"),
                                    set_(["containerEdits", "netDevices"],
                                         [{"hostInterfaceName": "eth1", "name": "eth0"}])),
        "permissions 'rw'": set_(node0 + ["permissions"], "rw"),
    }
    if not problems:
        for what, change in refused.items():
            if validator.is_valid(variant(change)):
                problems.append(f"the schema accepts {what}")
        for what, change in accepted.items():
            errors = list(validator.iter_errors(variant(change)))
            if errors:
                problems.append(f"the schema refuses {what}: {errors[0].message}")
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{spec_path} is a valid CDI {spec['cdiVersion']} spec; the schema refused {len(refused)} broken "
          f"variants and took {len(accepted)} valid ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())

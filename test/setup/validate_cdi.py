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


def set_(path, value):
    """A change that sets the spec's field at path to value."""
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


NODE0 = ["devices", 0, "containerEdits", "deviceNodes", 0]
NET_DEVICES = [{"hostInterfaceName": "eth1", "name": "eth0"}]

# Variants that break one rule each: the schema must refuse every one.
REFUSED = {
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
    "a device node without a path": set_(NODE0, {"type": "c"}),
    "a device node of an unknown type": set_(NODE0 + ["type"], "x"),
    "a mount without a containerPath": set_(["containerEdits", "mounts", 0], {"hostPath": "/x"}),
    "mount options that are not a list": set_(["containerEdits", "mounts", 0, "options"], "ro"),
    "a hook with a relative path": set_(["containerEdits", "hooks"],
                                        [{"hookName": "createContainer", "path": "bin/x"}]),
    "hostPath in a device node at 0.4.0": both(set_(["cdiVersion"], "0.4.0"),
                                               set_(NODE0 + ["hostPath"], "/dev/nvidia0")),
    "a device name beginning with a digit at 0.4.0": both(set_(["cdiVersion"], "0.4.0"),
                                                          set_(["devices", 0, "name"], "0train")),
    "annotations at 0.5.0": set_(["annotations"], {"a": "b"}),
    "additionalGids at 0.6.0": both(set_(["cdiVersion"], "0.6.0"), set_(["containerEdits", "additionalGids"], [44])),
    "netDevices at 1.0.0": both(set_(["cdiVersion"], "1.0.0"), set_(["containerEdits", "netDevices"], NET_DEVICES)),
}

# Variants that a runtime accepts: the schema must take every one.
ACCEPTED = {
    "hostPath in a device node at 0.5.0": set_(NODE0 + ["hostPath"], "/dev/nvidia0"),
    "a device name beginning with a digit at 0.5.0": set_(["devices", 0, "name"], "0train"),
    "annotations at 0.6.0": both(set_(["cdiVersion"], "0.6.0"), set_(["annotations"], {"a": "b"})),
    "netDevices at 1.1.0": both(set_(["cdiVersion"], "1.1.0"), set_(["containerEdits", "netDevices"], NET_DEVICES)),
    "permissions 'rw'": set_(NODE0 + ["permissions"], "rw"),
}


def variant(spec, change):
    s = copy.deepcopy(spec)
    change(s)
    return s


def variant_problems(validator, spec):
    """What the schema gets wrong of the variants of spec."""
    problems = [f"the schema accepts {what}" for what, change in REFUSED.items()
                if validator.is_valid(variant(spec, change))]
    for what, change in ACCEPTED.items():
        errors = list(validator.iter_errors(variant(spec, change)))
        if errors:
            problems.append(f"the schema refuses {what}: {errors[0].message}")
    return problems


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
    if not problems:
        problems = variant_problems(validator, spec)
    for p in problems:
        print(p)
    if problems:
        return 1
    print(f"{spec_path} is a valid CDI {spec['cdiVersion']} spec; the schema refused {len(REFUSED)} broken "
          f"variants and took {len(ACCEPTED)} valid ones")
    return 0


if __name__ == "__main__":
    sys.exit(main())

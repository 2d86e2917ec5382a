"""deploy/kubernetes/vgpu.yaml against the build: manifest.py SOURCE_ROOT BUILD_ROOT PLUGIN.

Each program the DaemonSet runs is one the build installs, each option it gives
is one that program's --help lists, the ConfigMap's config passes the
mediator's --check-config (on fake GPUs of an H100's size), and the pod has what
the mediator and the plugin need: the host's PID namespace, the mediator's
socket directory, the kubelet's directories."""
import os
import re
import subprocess
import sys
import tempfile

import yaml

src, build, plugin = sys.argv[1:4]
if plugin == "none":
    print("vgpu-device-plugin is not built: skipped")
    sys.exit(77)
docs = list(yaml.safe_load_all(open(os.path.join(src, "deploy/kubernetes/vgpu.yaml"))))
kinds = {d["kind"]: d for d in docs}
assert set(kinds) == {"Namespace", "ConfigMap", "DaemonSet"}, list(kinds)
pod = kinds["DaemonSet"]["spec"]["template"]["spec"]
assert pod["hostPID"] is True, "the mediator sees the processes it admits by their host pids"
programs = {"vgpu-mediatord": os.path.join(build, "tools/vgpu-mediatord"),
            "vgpu-setup": os.path.join(build, "tools/vgpu-setup"),
            "vgpu-device-plugin": plugin}


def check_options(argv):
    binary = programs[argv[0]]
    helptext = subprocess.run([binary, "--help"], capture_output=True, text=True)
    helptext = helptext.stdout + helptext.stderr
    for word in argv[1:]:
        if word.startswith("-"):
            option = word.split("=")[0].lstrip("-")  # Go's flag package shows one dash
            assert re.search(r"(^|\s)--?%s\b" % re.escape(option), helptext), (argv[0], option, helptext)


containers = {c["name"]: c for c in pod["containers"] + pod["initContainers"]}
check_options(containers["mediator"]["command"])
check_options(containers["device-plugin"]["command"])
setup = " ".join(containers["install"]["args"]).split()
i = setup.index("vgpu-setup")
check_options(["vgpu-setup"] + setup[i + 1:])
mounts = lambda c: {m["mountPath"] for m in containers[c]["volumeMounts"]}
assert "/run/vgpu" in mounts("mediator") and "/run/vgpu" in mounts("device-plugin")
assert {"/var/lib/kubelet/device-plugins", "/var/lib/kubelet/pod-resources"} <= mounts("device-plugin")
assert {"/host/opt/vgpu", "/host/etc/cdi", "/host/etc/vgpu"} <= mounts("install")

# The config, with the ConfigMap's state_dir and socket moved to a temp dir.
conf = kinds["ConfigMap"]["data"]["mediatord.conf"]
with tempfile.TemporaryDirectory() as tmp:
    conf = conf.replace("/run/vgpu", tmp)
    path = os.path.join(tmp, "mediatord.conf")
    open(path, "w").write(conf)
    env = dict(os.environ, FAKEGPU_MEMORY="80G")
    env.pop("LD_PRELOAD", None)
    r = subprocess.run([programs["vgpu-mediatord"], "--config", path, "--check-config"], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
print("ok: the manifest's programs, options, mounts and config")

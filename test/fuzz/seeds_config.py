"""Writes a seed corpus for config_fuzz: the mediator's example config, and
operator settings of each kind.  Usage: seeds_config.py DIR EXAMPLE_CONF"""
import os
import shutil
import sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
shutil.copy(sys.argv[2], os.path.join(out, "mediatord.conf"))
seeds = {
    "operator-mediator": "[vgpu]\nrequire = mediator\nmediator_socket = /run/vgpu/mediator.sock\n",
    "operator-guest": "# a VM\n[vgpu]\nrequire = guest-window\npci_id = 1af4:1110\n",
    "operator-drivers": "[vgpu]\nrequire = none ; comment\nreal_libcuda = /usr/lib/libcuda.so.1\n"
                        "real_nvml = /usr/lib/libnvidia-ml.so.1\n",
    "mediator-guest": "[mediator]\nsocket = /run/vgpu/m.sock\nstate_dir = /run/vgpu\noversubscribe = yes\n"
                      "[vgpu.vm]\ndevices = GPU-fa4e0000-0000-0000-0000-000000000000\nmemory = 1.5G\n"
                      "compute = 25\nguest = yes\nuids = 0\n",
}
for name, text in seeds.items():
    with open(os.path.join(out, name), "w") as f:
        f.write(text)

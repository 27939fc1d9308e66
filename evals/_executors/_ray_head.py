"""A local Ray cluster that dies with the driver that asked for it, SIGKILL included (docs/scale.md).

`ray.init()` in the driver starts the cluster as the driver's children, and the kernel kills its GCS and
raylet with the driver (Ray sets a parent-death signal on them). The raylet's own children, the per-node
agents (`ray::DashboardAgent`, `ray::RuntimeEnvAgent`, about 190 MB), are not the driver's: they see
the raylet die at once, then spend 60 s reporting its death to the GCS, dead as well, before they exit.

So the Ray executor runs this script instead, by path (it imports Ray, not Atoll), in a session of its
own, with a pipe on stdin. It starts the cluster, so every process of it but the workers (which Ray
puts in groups of their own and which exit with their raylet) is in this process group; it writes the
cluster's address on stdout and waits for EOF on stdin, which the kernel delivers once the driver is
gone however it went. Then it stops the cluster as Ray does and kills whatever is left in its group.
"""

import os
import signal
import sys

import ray


def main() -> None:
    ray.init(address="local")
    print(ray.get_runtime_context().gcs_address, flush=True)
    os.dup2(2, 1)  # the driver reads one line: anything Ray prints later goes where its warnings go
    sys.stdin.buffer.read()  # returns on EOF: the driver closed its end or died
    try:
        ray.shutdown()
    finally:
        os.killpg(0, signal.SIGKILL)  # the agents, and this process last


if __name__ == "__main__":
    main()

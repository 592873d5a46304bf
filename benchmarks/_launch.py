"""Run one command and print its wall time and rusage as JSON: `python -I -S _launch.py ARGV...`.

Why a launcher: Linux keeps a process's peak RSS across `exec`, and a child spawned by
`fork`, `vfork` or `posix_spawn` starts with its parent's. A benchmark process that built a
100k-issue store would lend every child its own peak; started from this small interpreter, a
child's peak is its own (this launcher's few MB are the floor). The command's stdout and stderr
go to /dev/null; its stdin is the launcher's.
"""

import json
import os
import sys
import time


def main(argv: list[str]) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    actions = [(os.POSIX_SPAWN_DUP2, devnull, 1), (os.POSIX_SPAWN_DUP2, devnull, 2)]
    start = time.perf_counter()
    pid = os.posix_spawnp(argv[0], argv, os.environ, file_actions=actions)
    _, status, usage = os.wait4(pid, 0)
    elapsed = time.perf_counter() - start
    report = {
        "elapsed_s": elapsed,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "returncode": os.waitstatus_to_exitcode(status),
    }
    sys.stdout.write(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])

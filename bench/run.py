#!/usr/bin/env python3
"""cadre benchmarks: harness overhead per tool round trip, and start-up time.

Runs the release `cadre` against `cadre-mock` (zero latency) on loopback and
writes figures to bench/results/<name>.json. Not a test: nothing here fails on
wall time; compare the ratios and the targets printed beside them.

    python3 bench/run.py overhead    # 200 sequential Read round trips
    python3 bench/run.py startup     # launch → first model request; trivial exec
    python3 bench/run.py fanout      # 1/4/10/32 children, pools 4 and 32
    python3 bench/run.py background  # 100 idle background children
    python3 bench/run.py all
    python3 bench/run.py overhead --bin DIR   # binaries already built in DIR, no build
    python3 bench/run.py all --out DIR        # figures elsewhere than bench/results

Memory is cadre's own peak RSS. A child's `ru_maxrss` on Linux also counts the
memory image it had before `exec`: a child forked (or vforked) by this Python
process reports Python's peak, not cadre's. So cadre is started through GNU
`/usr/bin/time`, a small C program whose own image (measured and reported as
`launcher_floor_kib`) is the floor below which no figure is meaningful, and the
peak RSS is the `%M` it reads from `wait4` for cadre alone.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
BIN = os.path.join(TARGET, "release")
TIME = "/usr/bin/time"
RESULTS = os.path.join(ROOT, "bench", "results")


def build():
    subprocess.run(
        ["cargo", "build", "--release", "--locked", "-p", "cadre-cli", "-p", "cadre-mock"],
        cwd=ROOT, check=True)


class Mock:
    """cadre-mock on a free port with a record file."""

    def __init__(self, script_text, work, tag="mock"):
        work = os.path.join(work, tag)
        os.makedirs(work, exist_ok=True)
        self.script = os.path.join(work, "script.yaml")
        self.record = os.path.join(work, "record.jsonl")
        with open(self.script, "w") as f:
            f.write(script_text)
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "cadre-mock"), "--script", self.script, "--port", "0",
             "--record", self.record],
            stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line.startswith("listening on "), line
        self.url = line[len("listening on "):]

    def cpu_s(self):
        """The mock's CPU time so far (user + system; clock-tick resolution)."""
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def records(self):
        with open(self.record) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def cadre_env(mock, home):
    env = dict(os.environ, CADRE_HOME=home, CADRE_PROVIDER="anthropic",
               CADRE_BASE_URL=mock.url, CADRE_MODEL="bench")
    env.pop("ANTHROPIC_API_KEY", None)
    return env


class Run:
    """One finished cadre run: wall time, cadre's peak RSS and CPU time, exit code."""

    def __init__(self, wall, rss_kib, cpu_s, code):
        self.wall, self.rss_kib, self.cpu_s, self.code = wall, rss_kib, cpu_s, code


def timed(argv, cwd=None, env=None):
    """Runs `argv` under GNU time. The peak RSS is the `%M` GNU time read for cadre alone;
    the CPU time (user + system, µs resolution) is from this process's `wait4` of GNU time,
    which covers cadre and GNU time's own ~1 ms."""
    with tempfile.NamedTemporaryFile(prefix="cadre-bench-rss-") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen([TIME, "-q", "-f", "%M", "-o", out.name] + argv, cwd=cwd, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        text = open(out.name).read().split()
    return Run(wall, int(text[-1]), usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))


def launcher_floor_kib():
    """Peak RSS GNU time reports for `true`: its own image before exec, the floor."""
    return median([timed(["true"]).rss_kib for _ in range(5)])


def run_cadre(mock, project, home, prompt):
    """Runs `cadre exec` under GNU time."""
    return timed([os.path.join(BIN, "cadre"), "exec", prompt], cwd=project, env=cadre_env(mock, home))


def launch_cadre(mock, project, home, prompt):
    """Runs `cadre exec` directly (no launcher in the way of start-up timing); returns
    (launch time in ms since the epoch, wall s, exit code). Its `ru_maxrss` is not read:
    it would be this Python process's."""
    env = cadre_env(mock, home)
    launch_ms = time.time() * 1000
    t0 = time.perf_counter()
    proc = subprocess.Popen([os.path.join(BIN, "cadre"), "exec", prompt], cwd=project, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, _ = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return launch_ms, wall, os.waitstatus_to_exitcode(status)


def reads_script(n):
    replies = [
        '      - tool_calls: [{ name: Read, input: { file_path: "small.txt" } }]'
        for _ in range(n)]
    replies.append('      - text: "done"')
    return "rules:\n  - name: bench\n    replies:\n" + "\n".join(replies) + "\n"


def with_project(fn):
    work = tempfile.mkdtemp(prefix="cadre-bench-")
    try:
        project = os.path.join(work, "project")
        os.makedirs(project)
        with open(os.path.join(project, "small.txt"), "w") as f:
            f.write("".join(f"line {i}\n" for i in range(20)))
        return fn(work, project, os.path.join(work, "home"))
    finally:
        shutil.rmtree(work, ignore_errors=True)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def service_us(recs):
    """Microseconds the mock spent on each request: arrival to the end of the streamed reply."""
    return [r["t_end_us"] - r["t_start_us"] for r in recs if "t_end_us" in r]


def overhead(runs=5, n=200):
    """Per round trip: (wall of a 200-Read run − wall of a no-tool run) / 200. That is the whole
    loop: cadre encoding and sending the request, the mock parsing, matching, recording and
    streaming its reply, cadre decoding it, running `Read` and logging. The mock's share (its
    own time per request, from its records) is reported beside it, and cadre's share is the
    difference. Wall time suffers when other processes compete for the CPUs, so CPU time per
    round trip (cadre's from rusage, the mock's from /proc) is reported too, with the load."""
    def go(work, project, home):
        mock = Mock(reads_script(n), work)
        base = Mock(reads_script(0), work, "base")
        try:
            load = os.getloadavg()[0]
            mock_cpu0, base_cpu0 = mock.cpu_s(), base.cpu_s()
            tools = [run_cadre(mock, project, home, "read it") for _ in range(runs)]
            bare = [run_cadre(base, project, home, "read it") for _ in range(runs)]
            mock_cpu, base_cpu = mock.cpu_s() - mock_cpu0, base.cpu_s() - base_cpu0
            assert all(r.code == 0 for r in tools + bare), "cadre failed"
            mock_us = service_us(mock.records())
        finally:
            mock.stop()
            base.stop()
        total = median([r.wall for r in tools])
        per_trip_ms = (total - median([r.wall for r in bare])) / n * 1000
        mock_ms = sum(mock_us) / len(mock_us) / 1000 if mock_us else None
        cadre_cpu_ms = (median([r.cpu_s for r in tools]) - median([r.cpu_s for r in bare])) / n * 1000
        mock_cpu_ms = (mock_cpu - base_cpu) / (runs * n) * 1000
        return {
            "measures": "ms per tool round trip (wall, 200 sequential Read calls minus a no-tool "
                        "run, / 200), the mock's mean service time per request (arrival to the "
                        "end of its reply), cadre's share (the difference); CPU ms per round trip "
                        "of cadre and of the mock; peak RSS of cadre alone",
            "round_trips": n,
            "runs": runs,
            "load_average_1min": round(load, 2),
            "wall_s_median": round(total, 4),
            "wall_s_no_tools_median": round(median([r.wall for r in bare]), 4),
            "ms_per_round_trip": round(per_trip_ms, 3),
            "ms_mock_per_request_mean": round(mock_ms, 3) if mock_ms is not None else None,
            "ms_cadre_per_round_trip": round(per_trip_ms - mock_ms, 3) if mock_ms is not None else None,
            "cpu_ms_cadre_per_round_trip": round(cadre_cpu_ms, 3),
            "cpu_ms_mock_per_round_trip": round(mock_cpu_ms, 3),
            "ms_per_round_trip_incl_startup": round(total / n * 1000, 3),
            "peak_rss_mib": round(max(r.rss_kib for r in tools) / 1024, 2),
            "peak_rss_mib_no_tools": round(max(r.rss_kib for r in bare) / 1024, 2),
            "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
            "targets": {"ms_per_round_trip": 1.0, "peak_rss_mib": 20},
        }
    return with_project(go)


def startup(runs=10):
    """Launch → the mock receiving the first request, with cadre started directly; a
    trivial exec's wall time; and its peak RSS in separate runs under GNU time."""
    def go(work, project, home):
        mock = Mock("rules:\n  - name: one\n    replies:\n      - text: \"hi\"\n", work)
        try:
            first, walls, rss = [], [], []
            for i in range(runs):
                launch_ms, wall, code = launch_cadre(mock, project, home, "hello")
                assert code == 0
                rec = mock.records()[-1]
                first.append(rec["t_start_us"] / 1000 - launch_ms)
                walls.append(wall)
            for i in range(runs):
                r = run_cadre(mock, project, home, "hello")
                assert r.code == 0
                rss.append(r.rss_kib)
        finally:
            mock.stop()
        return {
            "measures": "ms from launching cadre exec to the mock receiving its first request; "
                        "wall time of a trivial one-reply exec; cadre's peak RSS in it",
            "runs": runs,
            "ms_launch_to_first_request_median": round(median(first), 2),
            "ms_trivial_exec_median": round(median(walls) * 1000, 2),
            "peak_rss_mib_median": round(median(rss) / 1024, 2),
            "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
            "targets": {"ms_launch_to_first_request": 20},
        }
    return with_project(go)


def fanout_script(n):
    calls = "\n".join(
        f'          - {{ name: Agent, input: {{ description: "c{i}", prompt: "child-{i:03d}", subagent_type: "worker" }} }}'
        for i in range(n))
    children = "".join(
        f"""  - name: child-{i:03d}
    when: {{ first_user: "child-{i:03d}" }}
    replies:
      - latency_ms: 1000
        tool_calls: [{{ name: Read, input: {{ file_path: "small.txt" }} }}]
      - latency_ms: 1000
        text: "child {i} done"
""" for i in range(n))
    return f"""rules:
{children}  - name: parent
    replies:
      - tool_calls:
{calls}
      - text: "all done"
"""


WORKER = """---
name: worker
description: Bench worker.
tools: Read
---
You are a bench worker.
"""


def fanout(sizes=(1, 4, 10, 32), pools=(4, 16, 32)):
    """One reply spawns n children (each two replies of 1000 ms mock latency) through a
    pool; times come from the mock's records (µs)."""
    results = []
    for pool in pools:
        for n in sizes:
            def go(work, project, home):
                os.makedirs(os.path.join(project, ".cadre", "agents"), exist_ok=True)
                with open(os.path.join(project, ".cadre", "agents", "worker.md"), "w") as f:
                    f.write(WORKER)
                os.makedirs(home, exist_ok=True)
                with open(os.path.join(home, "config.toml"), "w") as f:
                    f.write(f"[subagents]\nmax_concurrent_subagents = {pool}\n"
                            f"max_subagents_per_turn = 64\nmax_running_subagents = 64\n")
                mock = Mock(fanout_script(n), work)
                try:
                    r = run_cadre(mock, project, home, "fan out")
                    assert r.code == 0, f"cadre exited {r.code}"
                    wall, maxrss = r.wall, r.rss_kib
                    recs = mock.records()
                finally:
                    mock.stop()
                parent = sorted((r for r in recs if r["rule"] == "parent"), key=lambda r: r["t_start_us"])
                kids = [r for r in recs if (r["rule"] or "").startswith("child-")]
                spawn_reply_end = parent[0]["t_end_us"]
                firsts = [(r["t_start_us"] - spawn_reply_end) / 1000 for r in kids if r["step"] == 0]
                last_child_end = max(r["t_end_us"] for r in kids)
                batch_wall_s = (parent[1]["t_start_us"] - spawn_reply_end) / 1e6
                ideal_s = -(-n // pool) * 2.0
                return {
                    "children": n,
                    "pool": pool,
                    "batch_wall_s": round(batch_wall_s, 3),
                    "ideal_s": ideal_s,
                    "efficiency": round(ideal_s / batch_wall_s, 4),
                    "ms_spawn_reply_to_first_child_request_max": round(max(firsts), 2) if pool >= n else None,
                    "ms_spawn_reply_to_first_child_request_median": round(median(firsts), 2) if pool >= n else None,
                    "ms_spawn_reply_to_first_child_request_min": round(min(firsts), 2),
                    "ms_last_child_end_to_parent_request": round((parent[1]["t_start_us"] - last_child_end) / 1000, 2),
                    "peak_rss_mib": round(maxrss / 1024, 2),
                    "process_wall_s": round(wall, 3),
                }
            results.append(with_project(go))
    by = {(r["pool"], r["children"]): r for r in results}
    per_child = None
    if (32, 32) in by and (32, 1) in by:
        per_child = round((by[(32, 32)]["peak_rss_mib"] - by[(32, 1)]["peak_rss_mib"]) / 31 * 1024, 1)
    return {
        "measures": "batch wall time against the ideal (ceil(n/pool) x 2 s); spawning reply's end "
                    "-> each child's first request (only when the pool holds the whole batch); "
                    "last child's reply end -> parent's next request; cadre's peak RSS, and per "
                    "child = (peak at 32 children - peak at 1) / 31 at pool 32",
        "runs": results,
        "rss_kib_per_child": per_child,
        "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
        "targets": {"efficiency": 0.98, "ms_spawn_reply_to_first_child_request": 10,
                    "ms_last_child_end_to_parent_request": 5, "rss_kib_per_child": 1024},
    }


def background_script(n):
    calls = "\n".join(
        f'          - {{ name: Agent, input: {{ description: "b{i}", prompt: "idle-{i:03d}", subagent_type: "worker", run_in_background: true }} }}'
        for i in range(n))
    return f"""rules:
  - name: child
    when: {{ system: "You are a bench worker" }}
    replies:
      - latency_ms: 10000
        text: "idle child done"
  - name: parent
    replies:
      - tool_calls:
{calls}
      - text: "started"
""" + "".join(f'      - text: "notified {k}"\n' for k in range(8))


def background(sizes=(1, 100)):
    """n background children idle on 10 s of mock latency while the parent's turn ends."""
    results = {}
    for n in sizes:
        def go(work, project, home):
            os.makedirs(os.path.join(project, ".cadre", "agents"), exist_ok=True)
            with open(os.path.join(project, ".cadre", "agents", "worker.md"), "w") as f:
                f.write(WORKER)
            os.makedirs(home, exist_ok=True)
            with open(os.path.join(home, "config.toml"), "w") as f:
                f.write("[subagents]\nmax_subagents_per_turn = 128\nmax_running_subagents = 128\n")
            mock = Mock(background_script(n), work)
            try:
                r = run_cadre(mock, project, home, "idle children")
                assert r.code == 0, f"cadre exited {r.code}"
                wall, maxrss = r.wall, r.rss_kib
                recs = mock.records()
            finally:
                mock.stop()
            parent = sorted((r for r in recs if r["rule"] == "parent"), key=lambda r: r["t_start_us"])
            kids = [r for r in recs if r["rule"] == "child"]
            last_child_end = max(r["t_end_us"] for r in kids)
            notice_turn = min(r["t_start_us"] for r in parent[2:])
            return {
                "children": n,
                "peak_rss_mib": round(maxrss / 1024, 2),
                "ms_last_child_reply_to_notice_turn": round((notice_turn - last_child_end) / 1000, 2),
                "notice_turns": len(parent) - 2,
                "process_wall_s": round(wall, 3),
            }
        results[n] = with_project(go)
    lo, hi = min(sizes), max(sizes)
    return {
        "measures": "cadre's peak RSS with n idle background children, RSS per idle child = "
                    "(peak at 100 - peak at 1) / 99; last child's reply end -> the parent's "
                    "notice turn",
        "runs": list(results.values()),
        "rss_kib_per_idle_child": round((results[hi]["peak_rss_mib"] - results[lo]["peak_rss_mib"]) / (hi - lo) * 1024, 1),
        "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
        "targets": {"rss_kib_per_idle_child": 1024, "ms_last_child_reply_to_notice_turn": 5},
    }


def main():
    global BIN, RESULTS
    args = sys.argv[1:]
    if "--out" in args:
        RESULTS = os.path.abspath(args[args.index("--out") + 1])
    which = args[0] if args else "all"
    if "--bin" in args:
        BIN = os.path.abspath(args[args.index("--bin") + 1])
    else:
        build()
    if not os.access(TIME, os.X_OK):
        sys.exit(f"{TIME} (GNU time, Debian package `time`) is needed to read cadre's own peak RSS")
    os.makedirs(RESULTS, exist_ok=True)
    print(f"load average: {os.getloadavg()}", file=sys.stderr)
    for name, fn in [("overhead", overhead), ("startup", startup), ("fanout", fanout),
                     ("background", background)]:
        if which in (name, "all"):
            figures = fn()
            figures["machine"] = {"cpus": os.cpu_count()}
            with open(os.path.join(RESULTS, f"{name}.json"), "w") as f:
                json.dump(figures, f, indent=2)
                f.write("\n")
            print(name, json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

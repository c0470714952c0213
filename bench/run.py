#!/usr/bin/env python3
"""cadre benchmarks: harness overhead per tool round trip, start-up time, children, long
sessions and what delegation saves the parent's context.

Runs the release `cadre` against `cadre-mock` (zero latency) on loopback and
writes figures to bench/results/<name>.json. Not a test: nothing here fails on
wall time; compare the ratios and the targets printed beside them.

    python3 bench/run.py overhead    # 200 sequential Read round trips
    python3 bench/run.py startup     # launch → first model request; trivial exec
    python3 bench/run.py fanout      # 1/4/10/32 children, pools 4 and 32
    python3 bench/run.py background  # 100 idle background children
    python3 bench/run.py turns       # 500 Read turns: harness time per turn at 10 and at 500
    python3 bench/run.py long        # 300 turns in a 32k window: compactions, flat round trips
    python3 bench/run.py context     # one exploration inline vs in three Explore children
    python3 bench/run.py all
    python3 bench/run.py --help     # this text; builds nothing
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
import random
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
        """The record file's lines. A request's line is written just after its reply's last
        event, and cadre may be gone by then: read until two reads 20 ms apart agree."""
        last = None
        for _ in range(50):
            with open(self.record) as f:
                lines = [l for l in f if l.strip()]
            if last is not None and len(lines) == len(last):
                break
            last = lines
            time.sleep(0.02)
        return [json.loads(l) for l in lines]

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


# The smallest client there is: connect to the mock, send one request, read the reply.
# Launched the way cadre is, its launch -> first request is what this machine costs
# any program (exec, loading libc, a socket) before it can ask anything.
FLOOR_CLIENT = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    const char *body = "{\"model\":\"bench\",\"max_tokens\":10,\"stream\":true,"
                       "\"messages\":[{\"role\":\"user\",\"content\":\"hello\"}]}";
    char req[1024], buf[4096];
    if (argc < 2)
        return 1;
    int n = snprintf(req, sizeof req, "POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\n"
                     "content-type: application/json\r\ncontent-length: %zu\r\n"
                     "connection: close\r\n\r\n%s", strlen(body), body);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(atoi(argv[1]));
    a.sin_addr.s_addr = htonl(0x7f000001);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, (struct sockaddr *)&a, sizeof a) != 0 || write(s, req, n) != n)
        return 1;
    while (read(s, buf, sizeof buf) > 0) {}
    return 0;
}
"""


def floor_client(work):
    """The floor client built with the machine's C compiler, or None without one."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src, exe = os.path.join(work, "floor.c"), os.path.join(work, "floor-client")
    with open(src, "w") as f:
        f.write(FLOOR_CLIENT)
    done = subprocess.run([cc, "-O2", "-o", exe, src], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL)
    return exe if done.returncode == 0 else None


def hot_symbols_found():
    """The share of `link/hot-symbols.txt` the binary under test defines: the link order
    keeps a trivial run's memory down only while its names match the build (a moved
    module renames every function in it), so a low share says to run
    `scripts/hot-symbols` again. None without `nm` or the list."""
    listed = os.path.join(ROOT, "crates", "cadre-cli", "link", "hot-symbols.txt")
    nm = shutil.which("nm")
    if not nm or not os.path.exists(listed):
        return None
    with open(listed) as f:
        names = f.read().split()
    out = subprocess.run([nm, "--defined-only", os.path.join(BIN, "cadre")],
                         capture_output=True, text=True)
    defined = {line.rsplit(" ", 1)[-1] for line in out.stdout.splitlines()}
    return round(sum(n in defined for n in names) / len(names), 3) if names else None


def startup(runs=10):
    """Launch → the mock receiving the first request, with cadre started directly; a
    trivial exec's wall time; and its peak RSS in separate runs under GNU time. Beside
    them, the same launch → first request of the smallest C client (when a C compiler
    is there), interleaved with cadre's runs: the machine's floor."""
    def go(work, project, home):
        mock = Mock("rules:\n  - name: one\n    replies:\n      - text: \"hi\"\n", work)
        client = floor_client(work)
        try:
            first, walls, rss, first_new, floor = [], [], [], [], []
            port = mock.url.rstrip("/").rsplit(":", 1)[-1]
            for i in range(runs):
                launch_ms, wall, code = launch_cadre(mock, project, home, "hello")
                assert code == 0
                rec = mock.records()[-1]
                first.append(rec["t_start_us"] / 1000 - launch_ms)
                walls.append(wall)
                if client:
                    launch_ms = time.time() * 1000
                    code = subprocess.run([client, port], stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL).returncode
                    assert code == 0, "the floor client failed"
                    floor.append(mock.records()[-1]["t_start_us"] / 1000 - launch_ms)
            # A new CADRE_HOME each run, as every CI job, container and fleet
            # of `cadre -p` starts: what a first run creates is on the clock.
            for i in range(runs):
                new_home = os.path.join(work, f"new-home-{i}")
                launch_ms, _, code = launch_cadre(mock, project, new_home, "hello")
                assert code == 0
                rec = mock.records()[-1]
                first_new.append(rec["t_start_us"] / 1000 - launch_ms)
            for i in range(runs):
                r = run_cadre(mock, project, home, "hello")
                assert r.code == 0
                rss.append(r.rss_kib)
        finally:
            mock.stop()
        return {
            "measures": "ms from launching cadre exec to the mock receiving its first request; "
                        "wall time of a trivial one-reply exec; cadre's peak RSS in it; the same "
                        "launch -> first request of the smallest C client (connect, send, read), "
                        "started the same way: what any program costs on this machine",
            "runs": runs,
            "ms_launch_to_first_request_median": round(median(first), 2),
            "ms_launch_to_first_request_new_home_median": round(median(first_new), 2),
            "ms_launch_to_first_request_c_client_median": round(median(floor), 2) if floor else None,
            "ms_trivial_exec_median": round(median(walls) * 1000, 2),
            "peak_rss_mib_median": round(median(rss) / 1024, 2),
            "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
            "hot_symbols_found": hot_symbols_found(),
            "targets": {"ms_launch_to_first_request": 5,
                        "ms_launch_to_first_request_new_home": 5},
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


def fanout(sizes=(1, 4, 10, 32, 64), pools=(4, 16, 32)):
    """One reply spawns n children (each two replies of 1000 ms mock latency) through a
    pool; times come from the mock's records (µs). The 64-child batch runs at pool 32 only."""
    results = []
    for pool in pools:
        for n in sizes:
            if n > 32 and pool != 32:
                continue
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
                    # A stall shows as one gap between children far above the rest.
                    "ms_largest_gap_between_first_requests": round(max(
                        (b - a for a, b in zip(sorted(firsts), sorted(firsts)[1:])), default=0), 2)
                    if pool >= n else None,
                    "ms_last_child_end_to_parent_request": round((parent[1]["t_start_us"] - last_child_end) / 1000, 2),
                    "peak_rss_mib": round(maxrss / 1024, 2),
                    "cpu_ms_cadre": round(r.cpu_s * 1000, 1),
                    "process_wall_s": round(wall, 3),
                }
            results.append(with_project(go))
            print(json.dumps(results[-1]), file=sys.stderr)
    by = {(r["pool"], r["children"]): r for r in results}
    per_child = None
    if (32, 32) in by and (32, 1) in by:
        per_child = round((by[(32, 32)]["peak_rss_mib"] - by[(32, 1)]["peak_rss_mib"]) / 31 * 1024, 1)
    return {
        "measures": "batch wall time against the ideal (ceil(n/pool) x 2 s); spawning reply's end "
                    "-> each child's first request (only when the pool holds the whole batch), and "
                    "the largest gap between two children's first requests (a stall shows there); "
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


def timed_json(argv, cwd=None, env=None):
    """Like `timed`, but keeps cadre's stdout (`exec --json` events) and returns them too."""
    with tempfile.NamedTemporaryFile(prefix="cadre-bench-rss-") as out, \
            tempfile.TemporaryFile(prefix="cadre-bench-events-", mode="w+") as events:
        t0 = time.perf_counter()
        proc = subprocess.Popen([TIME, "-q", "-f", "%M", "-o", out.name] + argv, cwd=cwd, env=env,
                                stdout=events, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
        text = open(out.name).read().split()
        events.seek(0)
        evs = []
        for line in events:
            try:
                evs.append(json.loads(line))
            except ValueError:
                pass
    run = Run(wall, int(text[-1]), usage.ru_utime + usage.ru_stime, os.waitstatus_to_exitcode(status))
    return run, evs


def body_bytes(rec):
    """Bytes of a recorded request body, re-encoded compactly (as cadre's serde_json sends it;
    key order is kept, so this matches the wire to within escaping differences)."""
    body = rec["body"]
    if isinstance(body, str):
        return len(body.encode())
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode())


def quantile(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def slope(xs, ys):
    """Least-squares slope of ys over xs."""
    n = len(xs)
    if n < 2:
        return None
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / var if var else None


def fixture_text(rng, name, lines):
    """A deterministic source-like text file: functions, config keys, TODOs."""
    words = ["parse", "load", "config", "request", "reply", "buffer", "session", "token",
             "window", "limit", "render", "event", "queue", "worker", "cache", "index"]
    out = [f"// {name}: generated fixture for the cadre benchmarks", ""]
    while len(out) < lines:
        a, b = rng.choice(words), rng.choice(words)
        k = rng.randrange(1000)
        out.append(f"pub fn {a}_{b}_{k}(input: &str, limit: usize) -> Result<usize, Error> {{")
        out.append(f"    let key = \"{a}.{b}.{k}\";  // config key read at start-up")
        if rng.random() < 0.2:
            out.append(f"    // TODO({b}): handle a {a} larger than the {b} limit")
        out.append(f"    let n = input.len().min(limit) + {k};")
        out.append(f"    log::debug!(\"{a} {b} {{}} {{}}\", key, n);")
        out.append("    Ok(n)")
        out.append("}")
        out.append("")
    return "\n".join(out[:lines]) + "\n"


# --- long: a 300-turn session in a 32k window ------------------------------------------------

LONG_WINDOW = 32000
LONG_FILES = 40
# The tool calls of one assistant turn, cycling with period 10 so every bucket of 30 turns holds
# the same mix: mostly one Read of a fixture file (1.5-6 KiB), sometimes a Read and a Bash call.
LONG_PATTERN = ["read", "read", "read+bash", "read", "bash", "read", "read", "read+bash", "read", "read"]


# The harsher variant: every LONG_BIG_PERIOD turns, a Read of a ~64 KiB file, a result about
# half the window (cadre cuts one input to half the window).
LONG_BIG_PERIOD = 11
LONG_BIG_LINES = 1800


def long_calls(turn, big=False):
    if big and turn % LONG_BIG_PERIOD == LONG_BIG_PERIOD - 1:
        return "big", '[{ name: Read, input: { file_path: "big.rs" } }]'
    kind = LONG_PATTERN[turn % len(LONG_PATTERN)]
    f = f"src/mod_{turn % LONG_FILES:02d}.rs"
    calls = []
    if "read" in kind:
        calls.append(f'{{ name: Read, input: {{ file_path: "{f}" }} }}')
    if "bash" in kind:
        g = f"src/mod_{(turn * 7 + 3) % LONG_FILES:02d}.rs"
        calls.append(f'{{ name: Bash, input: {{ command: "grep -n fn {g}", description: "list functions" }} }}')
    return kind, "[" + ", ".join(calls) + "]"


def long_script(turns, summaries, big=False):
    summary = ("Task: the benchmark session reads fixture files turn by turn. " * 8).strip()
    rules = ["rules:",
             "  - name: summary",
             '    when: { last_user: "<compaction-request>" }',
             "    step_by: requests",
             "    replies:"]
    rules += [f'      - text: "<summary {k}> {summary}"' for k in range(summaries)]
    rules += ["  - name: session", "    step_by: requests", "    replies:"]
    for t in range(turns):
        _, calls = long_calls(t, big)
        rules.append(f"      - tool_calls: {calls}")
    rules.append('      - text: "The session is done."')
    return "\n".join(rules) + "\n"


def long_fixture(project):
    rng = random.Random(11)
    os.makedirs(os.path.join(project, "src"), exist_ok=True)
    for i in range(LONG_FILES):
        name = f"src/mod_{i:02d}.rs"
        with open(os.path.join(project, name), "w") as f:
            f.write(fixture_text(rng, name, rng.randrange(40, 160)))
    with open(os.path.join(project, "big.rs"), "w") as f:
        f.write(fixture_text(rng, "big.rs", LONG_BIG_LINES))


def long_config(home):
    """The 32k window for the mock's model (`bench`), in the user config under CADRE_HOME."""
    text = f"[models.anthropic.bench]\ncontext_window = {LONG_WINDOW}\n"
    os.makedirs(home, exist_ok=True)
    with open(os.path.join(home, "config.toml"), "w") as f:
        f.write(text)


def long_session(work, project, home, turns, tag, big=False):
    long_fixture(project)
    long_config(home)
    mock = Mock(long_script(turns, turns, big), work, tag)
    try:
        env = cadre_env(mock, home)
        run, events = timed_json(
            [os.path.join(BIN, "cadre"), "exec", "--json", "--allow", "Bash(grep:*)",
             "run the long benchmark session"], cwd=project, env=env)
        recs = mock.records()
    finally:
        mock.stop()
    return run, events, recs


def long_gaps(recs, sizes):
    """cadre's share of each round trip (the mock's reply end -> cadre's next request, µs):
    between two session requests as (turn number of the next request, gap, its bytes, the
    calls the previous reply made), and those just before and after a summary request."""
    gaps = {"before_compaction": [], "after_compaction": []}
    turn_gaps = []
    turn_no = -1
    for i, r in enumerate(recs):
        if r["rule"] == "session":
            turn_no += 1
        if i == 0:
            continue
        prev = recs[i - 1]
        gap = r["t_start_us"] - prev["t_end_us"]
        if prev["rule"] == "session" and r["rule"] == "session":
            kind, _ = long_calls(turn_no - 1)
            turn_gaps.append((turn_no, gap, sizes[i], kind))
        elif r["rule"] == "summary":
            gaps["before_compaction"].append(gap)
        elif prev["rule"] == "summary":
            gaps["after_compaction"].append(gap)
    return gaps, turn_gaps


def long_big(work, project, home, turns):
    """The same session with a ~64 KiB Read every LONG_BIG_PERIOD turns: sizes and compactions."""
    run, events, recs = long_session(work, project, home, turns, "big", big=True)
    recs.sort(key=lambda r: r["t_start_us"])
    sizes = [body_bytes(r) for r in recs]
    ended = [e for e in events if e.get("type") == "compaction_ended"]
    turn_end = [e for e in events if e.get("type") == "turn_ended"]
    return {
        "measures": f"{turns} turns as above, but every {LONG_BIG_PERIOD}th turn reads a "
                    f"{LONG_BIG_LINES}-line (~64 KiB) file, whose result cadre cuts to half the window",
        "turns": turns,
        "exit_code": run.code,
        "turn_status": turn_end[-1].get("status") if turn_end else None,
        "requests": len(recs),
        "session_request_est_tokens_max": max(
            s for r, s in zip(recs, sizes) if r["rule"] == "session") // 4,
        "summary_request_est_tokens_max": max(
            (s for r, s in zip(recs, sizes) if r["rule"] == "summary"), default=0) // 4,
        "requests_over_window": [[i, r["rule"], s // 4, round(s / 4 / LONG_WINDOW * 100, 1)]
                                 for i, (r, s) in enumerate(zip(recs, sizes))
                                 if s > LONG_WINDOW * 4],
        "compactions": len(ended),
        "compactions_failed": [e.get("error") for e in ended if e.get("error")],
        "tokens_before": [e.get("tokens_before") for e in ended],
        "tokens_after": [e.get("tokens_after") for e in ended],
        "kept_messages": [e.get("kept_messages") for e in ended],
    }


def long_bench(turns=300, short_turns=75, bucket=30, runs=3, big_turns=120):
    """A `turns`-turn session in a 32k window, `runs` times; compactions, request sizes,
    cadre's time between a reply's end and its next request by turn number (each the median
    over the runs, which are the same script), peak RSS (and the peak of a shorter session
    beside it, to show memory does not grow with the session)."""
    def go(work, project, home):
        load = os.getloadavg()[0]
        sessions = [long_session(work, project, os.path.join(work, f"home-{k}"), turns, f"long-{k}")
                    for k in range(runs)]
        run, events, recs = sessions[0]
        windows = sorted({e.get("window") for e in events if e.get("type") == "context_usage"})
        if run.code != 0 or windows != [LONG_WINDOW]:
            sys.exit(f"long: cadre exited {run.code} and reported windows {windows}, not "
                     f"[{LONG_WINDOW}]: does this cadre read `context_window` from "
                     f"[models.<provider>.<id>] in config.toml?")
        shorts = [long_session(work, project, os.path.join(work, f"home-short-{k}"), short_turns,
                               f"short-{k}")[0] for k in range(runs)]
        # CPU time is far less disturbed by a busy machine than wall time: cadre's CPU per
        # turn over the first `short_turns` turns against the same over the turns after them.
        cpu_long = median([r.cpu_s for r, _, _ in sessions])
        cpu_short = median([r.cpu_s for r in shorts])
        big = long_big(work, project, os.path.join(work, "home-big"), big_turns)
        per_run = []
        for _, _, rs in sessions:
            rs.sort(key=lambda r: r["t_start_us"])
            per_run.append([body_bytes(r) for r in rs])
        sizes = per_run[0]
        same_requests = all(p == sizes for p in per_run)
        window_bytes = LONG_WINDOW * 4
        over = [i for i, b in enumerate(sizes) if b > window_bytes]
        requests = [{"n": i, "rule": r["rule"], "status": r["status"], "bytes": b,
                     "est_tokens": b // 4} for i, (r, b) in enumerate(zip(recs, sizes))]
        all_gaps = [long_gaps(rs, sz) for (_, _, rs), sz in zip(sessions, per_run)]
        gaps = {k: [median(xs) for xs in zip(*(g[k] for g, _ in all_gaps))]
                for k in ("before_compaction", "after_compaction")}
        turn_gaps = [(g[0][0], median([x[1] for x in g]), g[0][2], g[0][3])
                     for g in zip(*(t for _, t in all_gaps))]
        gaps["turn"] = [g[1] for g in turn_gaps]
        buckets = []
        for lo in range(0, turns + 1, bucket):
            inb = [g for g in turn_gaps if lo <= g[0] < lo + bucket]
            if not inb:
                continue
            row = {"turns": f"{lo}-{min(lo + bucket, turns + 1) - 1}",
                   "round_trips": len(inb),
                   "ms_median": round(median([g[1] for g in inb]) / 1000, 3),
                   "ms_mean": round(sum(g[1] for g in inb) / len(inb) / 1000, 3),
                   "ms_p90": round(quantile([g[1] for g in inb], 0.9) / 1000, 3),
                   "request_kib_mean": round(sum(g[2] for g in inb) / len(inb) / 1024, 1)}
            for kind in sorted(set(LONG_PATTERN)):
                ks = [g[1] for g in inb if g[3] == kind]
                if ks:
                    row[f"ms_median_{kind.replace('+', '_')}"] = round(median(ks) / 1000, 3)
            buckets.append(row)
        reads = [g for g in turn_gaps if g[3] == "read"]
        first_reads = [g[1] for g in reads if g[0] < bucket]
        last_reads = [g[1] for g in reads if g[0] >= turns - bucket]
        comp_started = [e for e in events if e.get("type") == "compaction_started"]
        comp_ended = [e for e in events if e.get("type") == "compaction_ended"]
        usage_events = [e for e in events if e.get("type") == "context_usage"]
        summary_idx = [i for i, r in enumerate(recs) if r["rule"] == "summary"]
        turn_end = [e for e in events if e.get("type") == "turn_ended"]
        return {
            "measures": "a scripted session of `turns` assistant turns (each a Read of a 1.5-6 KiB "
                        "fixture file, some with a Bash grep) in one `cadre exec --json`, model "
                        "window 32000 tokens: every request's body bytes and estimated tokens "
                        "(bytes/4), the compactions (summary requests and compaction events), "
                        "cadre's share of each round trip (the mock's reply end -> cadre's next "
                        "request, which includes running the tool) by turn number, each the "
                        "median over `runs` runs of the same script, and cadre's peak RSS, "
                        "beside a session of `short_turns` turns",
            "turns": turns,
            "context_window_tokens": LONG_WINDOW,
            "load_average_1min": round(load, 2),
            "runs": runs,
            "same_requests_every_run": same_requests,
            "exit_codes": [r.code for r, _, _ in sessions],
            "turn_status": turn_end[-1].get("status") if turn_end else None,
            "wall_s_median": round(median([r.wall for r, _, _ in sessions]), 3),
            "cpu_s_cadre_median": round(median([r.cpu_s for r, _, _ in sessions]), 3),
            "peak_rss_mib": round(max(r.rss_kib for r, _, _ in sessions) / 1024, 2),
            "short_turns": short_turns,
            "peak_rss_mib_short": round(max(r.rss_kib for r in shorts) / 1024, 2),
            "cpu_s_cadre_short_median": round(cpu_short, 3),
            "cpu_ms_per_turn_first_turns": round(cpu_short / short_turns * 1000, 3),
            "cpu_ms_per_turn_later_turns": round((cpu_long - cpu_short) / (turns - short_turns) * 1000, 3),
            "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
            "requests": len(recs),
            "requests_by_rule": {k: sum(1 for r in recs if r["rule"] == k)
                                 for k in sorted({str(r["rule"]) for r in recs})},
            "requests_not_200": [q["n"] for q in requests if q["status"] != 200],
            "request_bytes_max": max(sizes),
            "request_est_tokens_max": max(sizes) // 4,
            "request_est_tokens_max_percent_of_window": round(max(sizes) / 4 / LONG_WINDOW * 100, 1),
            "requests_over_window": over,
            "session_request_est_tokens_max": max(
                s for r, s in zip(recs, sizes) if r["rule"] == "session") // 4,
            "summary_request_est_tokens_max": max(
                (s for r, s in zip(recs, sizes) if r["rule"] == "summary"), default=0) // 4,
            "threshold_tokens": LONG_WINDOW * 85 // 100,
            "session_requests_over_threshold": [
                [i, s // 4] for i, (r, s) in enumerate(zip(recs, sizes))
                if r["rule"] == "session" and s // 4 > LONG_WINDOW * 85 // 100],
            "request_bytes_total": sum(sizes),
            "first_request_bytes": sizes[0],
            "compactions": {
                "summary_requests": len(summary_idx),
                "summary_request_numbers": summary_idx,
                "events_started": len(comp_started),
                "events_ended": len(comp_ended),
                "failed": [e for e in comp_ended if e.get("error")],
                "triggers": sorted({str(e.get("trigger")) for e in comp_started}),
                "tokens_before": [e.get("tokens_before") for e in comp_ended],
                "tokens_after": [e.get("tokens_after") for e in comp_ended],
                "kept_messages": [e.get("kept_messages") for e in comp_ended],
                "summary_request_bytes": [sizes[i] for i in summary_idx],
            },
            "context_usage_percent_max": max((e.get("percent", 0) for e in usage_events), default=None),
            "round_trip_ms": {
                "turn_median": round(median(gaps["turn"]) / 1000, 3),
                "turn_mean": round(sum(gaps["turn"]) / len(gaps["turn"]) / 1000, 3),
                "read_only_turn_median": round(median([g[1] for g in reads]) / 1000, 3),
                "before_compaction_median": round(median(gaps["before_compaction"]) / 1000, 3)
                if gaps["before_compaction"] else None,
                "after_compaction_median": round(median(gaps["after_compaction"]) / 1000, 3)
                if gaps["after_compaction"] else None,
                "slope_us_per_turn": round(slope([g[0] for g in turn_gaps],
                                                 [g[1] for g in turn_gaps]), 4),
                "read_only_last_over_first_bucket": round(median(last_reads) / median(first_reads), 3),
                "read_only_slope_us_per_turn": round(slope([g[0] for g in reads],
                                                           [g[1] for g in reads]), 4),
                "read_only_slope_us_per_kib": round(slope([g[2] / 1024 for g in reads],
                                                          [g[1] for g in reads]), 3),
            },
            "by_turn": buckets,
            "big_results": big,
            "request_sizes": [[q["n"], q["rule"], q["bytes"]] for q in requests],
        }
    return with_project(go)


# --- context: the same exploration inline and delegated to three Explore children ------------

CONTEXT_MODULES = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
CONTEXT_FILES_PER_MODULE = 50
CONTEXT_CALLS_PER_REPLY = 3


def context_fixture(project):
    """300 source-like files in six modules, the same bytes on every run."""
    rng = random.Random(7)
    for m in CONTEXT_MODULES:
        os.makedirs(os.path.join(project, "src", m), exist_ok=True)
        for i in range(CONTEXT_FILES_PER_MODULE):
            name = f"src/{m}/file_{i:02d}.rs"
            with open(os.path.join(project, name), "w") as f:
                f.write(fixture_text(rng, name, rng.randrange(25, 70)))


def context_part_calls(part):
    """The exploration of one third of the repository (two modules): 30 Reads and 4 Greps."""
    mods = CONTEXT_MODULES[2 * part:2 * part + 2]
    calls = []
    for m in mods:
        calls.append(f'{{ name: Grep, input: {{ pattern: "TODO", path: "src/{m}", output_mode: content }} }}')
        for i in range(0, 45, 3):  # 15 files of the module's 50
            calls.append(f'{{ name: Read, input: {{ file_path: "src/{m}/file_{i:02d}.rs" }} }}')
    calls.append(f'{{ name: Grep, input: {{ pattern: "fn load_", path: "src/{mods[0]}", output_mode: files_with_matches }} }}')
    calls.append(f'{{ name: Grep, input: {{ pattern: "config key", path: "src/{mods[1]}", output_mode: count }} }}')
    return calls


def context_report(part):
    mods = CONTEXT_MODULES[2 * part:2 * part + 2]
    return (f"Part {part + 1} (src/{mods[0]}, src/{mods[1]}): every file defines small functions that "
            f"read one config key each (the key is a string literal `a.b.N` logged at debug level); "
            f"nothing parses a config file. TODOs are about inputs larger than a limit; the "
            f"`load_*` functions are in src/{mods[0]}. No file in these modules reads the "
            f"environment or touches the network.")


def batched(calls):
    return ["[" + ", ".join(calls[i:i + CONTEXT_CALLS_PER_REPLY]) + "]"
            for i in range(0, len(calls), CONTEXT_CALLS_PER_REPLY)]


CONTEXT_SUMMARY_RULE = """  - name: summary
    when: { last_user: "<compaction-request>" }
    step_by: requests
    replies:
""" + "".join(f'      - text: "summary {k}"\n' for k in range(20))


def context_inline_script():
    calls = [c for part in range(3) for c in context_part_calls(part)]
    replies = "".join(f"      - tool_calls: {b}\n" for b in batched(calls))
    answer = " ".join(context_report(p) for p in range(3))
    return ("rules:\n" + CONTEXT_SUMMARY_RULE + "  - name: parent\n    step_by: requests\n    replies:\n"
            + replies + f'      - text: "{answer}"\n')


def context_delegated_script():
    children = ""
    for part in range(3):
        replies = "".join(f"      - tool_calls: {b}\n" for b in batched(context_part_calls(part)))
        children += (f"  - name: explore-{part + 1}\n"
                     f'    when: {{ system: "You are Explore", first_user: "part-{part + 1}" }}\n'
                     f"    step_by: requests\n    replies:\n{replies}"
                     f'      - text: "{context_report(part)}"\n')
    agents = ", ".join(
        f'{{ name: Agent, input: {{ description: "explore part {p + 1}", subagent_type: Explore, '
        f'prompt: "part-{p + 1}: explore src/{CONTEXT_MODULES[2 * p]} and src/{CONTEXT_MODULES[2 * p + 1]}: '
        f'where config keys are read, every TODO, the load_ functions. Report in a few sentences. medium" }} }}'
        for p in range(3))
    answer = " ".join(context_report(p) for p in range(3))
    return ("rules:\n" + CONTEXT_SUMMARY_RULE + children
            + "  - name: parent\n    step_by: requests\n    replies:\n"
            + f"      - tool_calls: [{agents}]\n" + f'      - text: "{answer}"\n')


def context_run(work, project, home, script, tag):
    mock = Mock(script, work, tag)
    try:
        run, events = timed_json(
            [os.path.join(BIN, "cadre"), "exec", "--json",
             "explore the fixture repository: where are config keys read, every TODO, the load_ functions"],
            cwd=project, env=cadre_env(mock, home))
        recs = mock.records()
    finally:
        mock.stop()
    recs.sort(key=lambda r: r["t_start_us"])
    parent_recs = [r for r in recs if r["rule"] == "parent"]
    parent = [body_bytes(r) for r in parent_recs]
    last = json.dumps(parent_recs[-1]["body"]) if parent_recs else ""
    kids = [body_bytes(r) for r in recs if (r["rule"] or "").startswith("explore-")]
    return {
        "exit_code": run.code,
        "wall_s": round(run.wall, 3),
        "peak_rss_mib": round(run.rss_kib / 1024, 2),
        "requests_not_200": sum(1 for r in recs if r["status"] != 200),
        "unmatched_requests": sum(1 for r in recs if r["rule"] is None),
        "compactions": sum(1 for e in events if e.get("type") == "compaction_started"),
        "parent_requests": len(parent),
        "parent_request_bytes_total": sum(parent),
        "parent_request_bytes_peak": max(parent) if parent else 0,
        "parent_est_tokens_peak": max(parent) // 4 if parent else 0,
        "parent_first_request_bytes": parent[0] if parent else 0,
        "reports_in_parent_last_request": sum(1 for p in range(3) if f"Part {p + 1} (src/" in last),
        "children_requests": len(kids),
        "children_request_bytes_total": sum(kids),
        "children_request_bytes_peak": max(kids) if kids else 0,
        "children_est_tokens_peak": max(kids) // 4 if kids else 0,
    }


def context_bench():
    """The same exploration (102 tool calls: 90 Reads, 12 Greps over 300 files), done by the
    parent itself and delegated to three Explore children; the parent's request bytes and
    peak context in both, from the mock's records (children are the `explore-N` rules, matched
    on the Explore system prompt)."""
    def go(work, project, home):
        context_fixture(project)
        inline = context_run(work, project, os.path.join(work, "home-inline"),
                             context_inline_script(), "inline")
        delegated = context_run(work, project, os.path.join(work, "home-delegated"),
                                context_delegated_script(), "delegated")
        calls = sum(len(context_part_calls(p)) for p in range(3))
        return {
            "measures": "one scripted exploration over a 300-file fixture repository (6 modules x "
                        "50 files, 1-3 KiB each): inline, the parent makes every call itself (3 "
                        "per reply); delegated, the parent starts three Explore children in one "
                        "reply, each makes a third of the calls (3 per reply) and reports a short "
                        "text. Request bytes from the mock's records; tokens estimated as bytes/4",
            "fixture_files": len(CONTEXT_MODULES) * CONTEXT_FILES_PER_MODULE,
            "fixture_bytes": sum(os.path.getsize(os.path.join(dp, f))
                                 for dp, _, fs in os.walk(os.path.join(project, "src")) for f in fs),
            "tool_calls": calls,
            "inline": inline,
            "delegated": delegated,
            "ratio_parent_total_bytes": round(delegated["parent_request_bytes_total"]
                                              / inline["parent_request_bytes_total"], 4),
            "ratio_parent_peak_bytes": round(delegated["parent_request_bytes_peak"]
                                             / inline["parent_request_bytes_peak"], 4),
            "ratio_all_delegated_total_bytes": round(
                (delegated["parent_request_bytes_total"] + delegated["children_request_bytes_total"])
                / inline["parent_request_bytes_total"], 4),
            "targets": {"ratio_parent_total_bytes": 0.10, "ratio_parent_peak_bytes": 0.10},
        }
    return with_project(go)


def turns_bench(n=500, runs=3, short=50):
    """One `cadre exec` of `n` sequential `Read` turns of a small file with no window limit in
    reach (requests grow to ~170 KB): cadre's harness time per turn, the mock's reply end ->
    cadre's next request, around turn 10 and around turn `n` (medians over `runs` runs), with
    cadre's CPU time and peak RSS."""
    def go(work, project, home):
        # The default turn limits (500 requests, 500 tool calls) stop a runaway loop
        # just before turn 500; this session is meant to be that long.
        os.makedirs(home, exist_ok=True)
        with open(os.path.join(home, "config.toml"), "w") as f:
            f.write("[limits]\nmax_requests_per_turn = 2000\nmax_tool_calls_per_turn = 2000\n")
        mock = Mock(reads_script(n), work)
        try:
            load = os.getloadavg()[0]
            done = []
            for _ in range(runs):
                before = len(mock.records()) if os.path.exists(mock.record) else 0
                r = run_cadre(mock, project, home, "read it")
                assert r.code == 0, f"cadre exited {r.code}"
                recs = mock.records()[before:]
                recs.sort(key=lambda x: x["t_start_us"])
                done.append((r, recs))
            # The same script cut short: CPU per turn past the first `short`
            # turns is the difference, start-up excluded.
            short_mock = Mock(reads_script(short), work, "short")
            try:
                shorts = [run_cadre(short_mock, project, home, "read it") for _ in range(runs)]
                assert all(r.code == 0 for r in shorts), "cadre failed"
            finally:
                short_mock.stop()
        finally:
            mock.stop()
        per_turn = [[(recs[i]["t_start_us"] - recs[i - 1]["t_end_us"]) / 1000
                     for i in range(1, len(recs))] for _, recs in done]

        def around(k, width=10):
            lo, hi = max(0, k - width // 2), min(len(per_turn[0]), k + width // 2)
            return round(median([g for gaps in per_turn for g in gaps[lo:hi]]), 3)
        sizes = [body_bytes(x) for x in done[0][1]]
        return {
            "measures": f"{n} sequential Read turns of a 20-line file in one cadre exec: cadre's "
                        "harness time per turn (the mock's reply end -> cadre's next request, which "
                        "includes decoding the reply, running Read, logging, and encoding and "
                        "sending the next request), the median of the 10 turns around turn 10 and "
                        f"around turn {n} over {runs} runs; cadre's CPU time per turn (over the "
                        f"first {short} turns, start-up included, and past them: the difference from "
                        f"a {short}-turn run of the same script) and peak RSS. The gap includes moving "
                        "the request through loopback TCP and the mock receiving it, which grows "
                        "with the request",
            "turns": n,
            "runs": runs,
            "load_average_1min": round(load, 2),
            "ms_harness_per_turn_at_10": around(10),
            "ms_harness_per_turn_at_100": around(100),
            "ms_harness_per_turn_at_end": around(n - 5),
            "ms_harness_per_turn_median": round(median([g for gaps in per_turn for g in gaps]), 3),
            "request_bytes_first": sizes[0],
            "request_bytes_last": sizes[-1],
            "cpu_ms_cadre_per_turn": round(median([r.cpu_s for r, _ in done]) / n * 1000, 3),
            "cpu_ms_cadre_per_turn_first_50": round(median([r.cpu_s for r in shorts]) / short * 1000, 3),
            "cpu_ms_cadre_per_turn_after_50": round(
                (median([r.cpu_s for r, _ in done]) - median([r.cpu_s for r in shorts]))
                / (n - short) * 1000, 3),
            "cpu_s_cadre_median": round(median([r.cpu_s for r, _ in done]), 3),
            "peak_rss_mib": round(max(r.rss_kib for r, _ in done) / 1024, 2),
            "launcher_floor_mib": round(launcher_floor_kib() / 1024, 2),
            "targets": {"ms_harness_per_turn_at_10": 0.25, "ms_harness_per_turn_at_end": 0.5},
        }
    return with_project(go)


def main():
    global BIN, RESULTS
    args = sys.argv[1:]
    names = ["overhead", "startup", "fanout", "background", "turns", "long", "context", "all"]
    if not args or args[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return
    if args[0] not in names:
        sys.exit(f"unknown benchmark {args[0]!r}; one of: {', '.join(names)} (--help)")
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
                     ("background", background), ("turns", turns_bench), ("long", long_bench), ("context", context_bench)]:
        if which in (name, "all"):
            figures = fn()
            figures["machine"] = {"cpus": os.cpu_count(),
                                  "load_average": list(os.getloadavg())}
            with open(os.path.join(RESULTS, f"{name}.json"), "w") as f:
                json.dump(figures, f, indent=2)
                f.write("\n")
            print(name, json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()

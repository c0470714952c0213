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
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "target", "release")
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

    def records(self):
        with open(self.record) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def run_cadre(mock, project, home, prompt):
    """Runs `cadre exec`; returns (launch time in ms since epoch, wall s, peak RSS KiB, exit code)."""
    env = dict(os.environ, CADRE_HOME=home, CADRE_PROVIDER="anthropic",
               CADRE_BASE_URL=mock.url, CADRE_MODEL="bench")
    env.pop("ANTHROPIC_API_KEY", None)
    launch_ms = time.time() * 1000
    t0 = time.perf_counter()
    proc = subprocess.Popen([os.path.join(BIN, "cadre"), "exec", prompt], cwd=project, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, rusage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    return launch_ms, wall, rusage.ru_maxrss, os.waitstatus_to_exitcode(status)


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


def overhead(runs=5, n=200):
    def go(work, project, home):
        mock = Mock(reads_script(n), work)
        base = Mock(reads_script(0), work, "base")
        try:
            walls, base_walls, rss = [], [], []
            for _ in range(runs):
                _, wall, maxrss, code = run_cadre(mock, project, home, "read it")
                assert code == 0, f"cadre exited {code}"
                walls.append(wall)
                rss.append(maxrss)
            for _ in range(runs):
                _, wall, _, code = run_cadre(base, project, home, "read it")
                assert code == 0
                base_walls.append(wall)
        finally:
            mock.stop()
            base.stop()
        total = median(walls)
        per_trip_ms = (total - median(base_walls)) / n * 1000
        return {
            "round_trips": n,
            "runs": runs,
            "wall_s_median": round(total, 4),
            "wall_s_no_tools_median": round(median(base_walls), 4),
            "ms_per_round_trip": round(per_trip_ms, 3),
            "ms_per_round_trip_incl_startup": round(total / n * 1000, 3),
            "peak_rss_mib": round(max(rss) / 1024, 2),
            "targets": {"ms_per_round_trip": 1.0, "peak_rss_mib": 20},
        }
    return with_project(go)


def startup(runs=10):
    def go(work, project, home):
        mock = Mock("rules:\n  - name: one\n    replies:\n      - text: \"hi\"\n", work)
        try:
            first, walls = [], []
            for i in range(runs):
                launch_ms, wall, _, code = run_cadre(mock, project, home, "hello")
                assert code == 0
                rec = mock.records()[-1]
                first.append(rec["t_start_ms"] - launch_ms)
                walls.append(wall)
        finally:
            mock.stop()
        return {
            "runs": runs,
            "ms_launch_to_first_request_median": round(median(first), 2),
            "ms_trivial_exec_median": round(median(walls) * 1000, 2),
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


def fanout(sizes=(1, 4, 10, 32), pools=(4, 32)):
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
                    _, wall, maxrss, code = run_cadre(mock, project, home, "fan out")
                    assert code == 0, f"cadre exited {code}"
                    recs = mock.records()
                finally:
                    mock.stop()
                parent = sorted((r for r in recs if r["rule"] == "parent"), key=lambda r: r["t_start_ms"])
                kids = [r for r in recs if (r["rule"] or "").startswith("child-")]
                spawn_reply_end = parent[0]["t_end_ms"]
                firsts = [r["t_start_ms"] - spawn_reply_end for r in kids if r["step"] == 0]
                last_child_end = max(r["t_end_ms"] for r in kids)
                batch_wall_s = (parent[1]["t_start_ms"] - spawn_reply_end) / 1000
                ideal_s = -(-n // pool) * 2.0
                return {
                    "children": n,
                    "pool": pool,
                    "batch_wall_s": round(batch_wall_s, 3),
                    "ideal_s": ideal_s,
                    "efficiency": round(ideal_s / batch_wall_s, 4),
                    "ms_spawn_reply_to_first_child_request_max": max(firsts) if pool >= n else None,
                    "ms_spawn_reply_to_first_child_request_min": min(firsts),
                    "ms_last_child_end_to_parent_request": parent[1]["t_start_ms"] - last_child_end,
                    "peak_rss_mib": round(maxrss / 1024, 2),
                    "process_wall_s": round(wall, 3),
                }
            results.append(with_project(go))
    by = {(r["pool"], r["children"]): r for r in results}
    per_child = None
    if (32, 32) in by and (32, 1) in by:
        per_child = round((by[(32, 32)]["peak_rss_mib"] - by[(32, 1)]["peak_rss_mib"]) / 31 * 1024, 1)
    return {
        "runs": results,
        "rss_kib_per_child": per_child,
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
                _, wall, maxrss, code = run_cadre(mock, project, home, "idle children")
                assert code == 0, f"cadre exited {code}"
                recs = mock.records()
            finally:
                mock.stop()
            parent = sorted((r for r in recs if r["rule"] == "parent"), key=lambda r: r["t_start_ms"])
            kids = [r for r in recs if r["rule"] == "child"]
            last_child_end = max(r["t_end_ms"] for r in kids)
            notice_turn = min(r["t_start_ms"] for r in parent[2:])
            return {
                "children": n,
                "peak_rss_mib": round(maxrss / 1024, 2),
                "ms_last_child_reply_to_notice_turn": notice_turn - last_child_end,
                "notice_turns": len(parent) - 2,
                "process_wall_s": round(wall, 3),
            }
        results[n] = with_project(go)
    lo, hi = min(sizes), max(sizes)
    return {
        "runs": list(results.values()),
        "rss_kib_per_idle_child": round((results[hi]["peak_rss_mib"] - results[lo]["peak_rss_mib"]) / (hi - lo) * 1024, 1),
        "targets": {"rss_kib_per_idle_child": 1024, "ms_last_child_reply_to_notice_turn": 5},
    }


def main():
    which = sys.argv[1] if len(sys.argv) > 1 else "all"
    build()
    os.makedirs(RESULTS, exist_ok=True)
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

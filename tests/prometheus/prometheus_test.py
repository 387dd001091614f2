#!/usr/bin/env python3
"""hdbench's Prometheus output as an operator's Prometheus reads it (docs/fleet.md, "Prometheus").

Four copies of committed h200 members as nodes gpu01..gpu04: gpu02's pinned copies 5 % slower (a
FAIL), gpu03's 10 % faster (a WARN), gpu04 measured 8 days ago (stale), gpu01 healthy. Each is
checked against the committed h200 set with `hdbench check --format prometheus` (and once with
--prometheus DIR) and the output passes `promtool check metrics`; then `hdbench fleet --prometheus
DIR` writes DIR/hdbench.prom, a real prometheus-node-exporter (127.0.0.1, a free port, only its
textfile collector on DIR) serves it, and a real Prometheus (its own storage and port, scraping that
node_exporter every second, share/hdbench/hdbench-alerts.yml loaded) is queried over its HTTP API:
grades, values and labels read back as check.json has them, gpu02 FAILs and alerts, gpu04's verdict
is stale, gpu03's WARN alerts only after a second run. Everything started is stopped in `finally`.
Exit 77 (skipped) without promtool, prometheus or prometheus-node-exporter, unless
HDB_PROMETHEUS_TEST_REQUIRED=1 (.ci/run), where that is a failure.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fleet"))
from fleet_common import edit_meta, plant_slow_pinned, run, set_hostname  # noqa: E402

HANG_GUARD_S = 90  # a wait that has not happened by then is a failure, on a loaded 2-core machine too
PINNED_H2D = {"family": "copy", "figure": "pinned h2d 1 GiB", "gpu": "0"}


def fail(message):
    raise SystemExit(f"FAIL: {message}")


def binaries():
    """promtool, prometheus and node_exporter, or exit 77 / a failure where CI requires them."""
    found = {name: shutil.which(name) or (f"/usr/bin/{name}" if os.access(f"/usr/bin/{name}", os.X_OK) else None)
             for name in ("promtool", "prometheus", "prometheus-node-exporter")}
    missing = [name for name, path in found.items() if path is None]
    if missing:
        if os.environ.get("HDB_PROMETHEUS_TEST_REQUIRED") == "1":
            fail(f"{', '.join(missing)} not found, and HDB_PROMETHEUS_TEST_REQUIRED=1")
        print(f"SKIPPED: {', '.join(missing)} not found (Debian: prometheus, prometheus-node-exporter)")
        sys.exit(77)
    return found


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def utc(when):
    return when.strftime("%Y-%m-%dT%H:%M:%SZ")


def set_measured(run_dir, when):
    """The run measured at `when`: what a new run of the node would record in meta.json."""
    def edit(meta):
        meta["started_utc"] = utc(when - datetime.timedelta(minutes=3))
        meta["finished_utc"] = utc(when)
    edit_meta(run_dir, edit)


def promtool_metrics(promtool, text, what):
    """`promtool check metrics` on `text` (stdin): exit 0 and nothing printed (no lint problem)."""
    proc = subprocess.run([promtool, "check", "metrics"], input=text, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if proc.returncode != 0 or proc.stdout.strip():
        fail(f"promtool check metrics on {what}: exit {proc.returncode}\n{proc.stdout}")


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def unescape(value):
    r"""A label value of the text format as it was: \\, \" and \n undone."""
    return re.sub(r'\\(.)', lambda m: "\n" if m.group(1) == "n" else m.group(1), value)


def samples(text):
    """The exposition text's samples as [(name, labels dict, value)]."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail(f"not a sample line: {line!r}")
        labels = {k: unescape(v) for k, v in LABEL.findall(m.group(2) or "")}
        out.append((m.group(1), labels, float(m.group(3))))
    return out


def one(found, name, **labels):
    """The value of the one sample `name` with (at least) these labels."""
    values = [v for n, l, v in found if n == name and all(l.get(k) == x for k, x in labels.items())]
    if len(values) != 1:
        fail(f"{len(values)} samples of {name} {labels}, expected one")
    return values[0]


def http_get(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.read().decode()


def wait_for(what, probe, processes):
    """Calls probe() until it returns something true; fails after the hang guard or when a process died."""
    deadline = time.monotonic() + HANG_GUARD_S
    last = None
    while time.monotonic() < deadline:
        for name, proc in processes.items():
            if proc.poll() is not None:
                fail(f"{name} exited {proc.returncode} while waiting for {what}")
        try:
            result = probe()
            if result:
                return result
        except (OSError, ValueError) as e:  # not listening yet, or an answer without the data
            last = e
        time.sleep(0.2)
    fail(f"no {what} after {HANG_GUARD_S} s (last error: {last})")


def query(base, expr):
    answer = json.loads(http_get(f"{base}/api/v1/query?" + urllib.parse.urlencode({"query": expr})))
    if answer.get("status") != "success":
        raise ValueError(f"query {expr}: {answer}")
    return answer["data"]["result"]


def firing(base):
    answer = json.loads(http_get(f"{base}/api/v1/alerts"))
    return [a for a in answer["data"]["alerts"] if a["state"] == "firing"]


def stop(processes, logs):
    for proc in processes.values():
        if proc.poll() is None:
            proc.terminate()
    for name, proc in processes.items():
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    for log in logs:
        log.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--hdbench", required=True)
    parser.add_argument("--members", required=True, help="results/reference/h200/runs")
    parser.add_argument("--alerts", required=True, help="share/hdbench/hdbench-alerts.yml")
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    tools = binaries()
    reference = os.path.dirname(os.path.dirname(os.path.abspath(args.members)))  # results/reference
    started = time.monotonic()
    work = args.workdir
    shutil.rmtree(work, ignore_errors=True)
    nodes_dir = os.path.join(work, "nodes")
    dirs = []
    for i, run_id in enumerate(sorted(os.listdir(args.members))[:4], start=1):
        d = os.path.join(nodes_dir, f"gpu{i:02d}")
        os.makedirs(d)
        for name in ("meta.json", "results.csv"):
            shutil.copy(os.path.join(args.members, run_id, name), d)
        set_hostname(d, f"gpu{i:02d}")
        dirs.append(d)
    if len(dirs) != 4:
        fail(f"expected 4 committed members in {args.members}, found {len(dirs)}")
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    for d in dirs[:3]:
        set_measured(d, now - datetime.timedelta(hours=1))
    week_old = now - datetime.timedelta(days=8)
    set_measured(dirs[3], week_old)
    plant_slow_pinned(dirs[1], 0.95)  # gpu02: FAIL
    plant_slow_pinned(dirs[2], 1.10)  # gpu03: faster than its band, a WARN

    # 1. check --format prometheus on each node (it writes check.json too, which fleet reads).
    want = {"gpu01": 0, "gpu02": 2, "gpu03": 1, "gpu04": 0}
    checked = {}
    for d in dirs:
        node = os.path.basename(d)
        status, text, err = run([args.hdbench, "check", d, "--format", "prometheus", "--reference", reference])
        if status != (1 if node == "gpu02" else 0):
            fail(f"hdbench check {node} exited {status}: {err}")
        promtool_metrics(tools["promtool"], text, f"check {node}")
        found = samples(text)
        if one(found, "hdbench_node_grade", node=node) != want[node]:
            fail(f"check {node}: hdbench_node_grade {one(found, 'hdbench_node_grade', node=node)}, expected {want[node]}")
        checked[node] = found
    with open(os.path.join(dirs[1], "check.json")) as f:
        check_gpu02 = json.load(f)
    pinned02 = next(l for l in check_gpu02["lines"] if l["family"] == "copy" and l["figure"] == "pinned h2d 1 GiB")
    if pinned02["grade"] != "FAIL":
        fail(f"gpu02's pinned h2d is {pinned02['grade']} in check.json")
    # --prometheus DIR writes DIR/hdbench.prom, the same series as --format prometheus prints.
    check_dir = os.path.join(work, "textfile-check")
    os.makedirs(check_dir)
    _, text, _ = run([args.hdbench, "check", dirs[1], "--no-files", "--format", "prometheus", "--reference", reference,
                      "--prometheus", check_dir], expect=1)
    with open(os.path.join(check_dir, "hdbench.prom")) as f:
        if f.read() != text:
            fail("check --prometheus DIR wrote other series than --format prometheus printed")
    if sorted(os.listdir(check_dir)) != ["hdbench.prom"]:
        fail(f"check --prometheus left {sorted(os.listdir(check_dir))}")
    run([args.hdbench, "check", dirs[1], "--prometheus", os.path.join(work, "no-such-dir")], expect=2)
    print(f"check --format prometheus: 4 nodes, promtool check metrics clean; gpu02 hdbench_node_grade 2, "
          f"{len(checked['gpu01'])} samples a node")

    # 2. fleet --prometheus DIR: every node in one textfile.
    textfile = os.path.join(work, "textfile")
    os.makedirs(textfile)
    fleet = [args.hdbench, "fleet", nodes_dir, "--no-plots", "--reference", reference, "--prometheus", textfile, "--format",
             "prometheus"]
    _, text, _ = run(fleet + ["--out", os.path.join(work, "out1")], expect=1)
    promtool_metrics(tools["promtool"], text, "fleet")
    first_run = text
    with open(os.path.join(textfile, "hdbench.prom")) as f:
        if f.read() != text:
            fail("fleet --prometheus DIR wrote other series than --format prometheus printed")
    print(f"fleet --prometheus: {len(text.splitlines())} lines, {len(text)} bytes; promtool check metrics clean")

    processes, logs = {}, []
    try:
        exporter_port, prometheus_port = free_port(), free_port()
        exporter_log = open(os.path.join(work, "node_exporter.log"), "w")
        logs.append(exporter_log)
        processes["node_exporter"] = subprocess.Popen(
            [tools["prometheus-node-exporter"], f"--web.listen-address=127.0.0.1:{exporter_port}",
             "--collector.disable-defaults", "--collector.textfile", f"--collector.textfile.directory={textfile}"],
            stdout=exporter_log, stderr=subprocess.STDOUT)
        exporter = f"http://127.0.0.1:{exporter_port}/metrics"
        scraped = samples(wait_for("node_exporter /metrics", lambda: http_get(exporter), processes))
        if one(scraped, "node_textfile_scrape_error") != 0:
            fail("node_exporter could not read the textfile (node_textfile_scrape_error 1)")
        for node, grade in want.items():
            if one(scraped, "hdbench_node_grade", node=node) != grade:
                fail(f"node_exporter: {node}'s hdbench_node_grade is not {grade}")
        if one(scraped, "hdbench_figure_grade", node="gpu02", **PINNED_H2D) != 2:
            fail("node_exporter: gpu02's pinned h2d is not FAIL (2)")
        if one(scraped, "hdbench_figure_grade", node="gpu01", **PINNED_H2D) != 0:
            fail("node_exporter: gpu01's pinned h2d is not PASS (0)")
        value = one(scraped, "hdbench_figure_value_bytes_per_second", node="gpu02", **PINNED_H2D)
        low = one(scraped, "hdbench_figure_band_low_bytes_per_second", node="gpu02", **PINNED_H2D)
        high = one(scraped, "hdbench_figure_band_high_bytes_per_second", node="gpu02", **PINNED_H2D)
        tolerance = one(scraped, "hdbench_figure_tolerance_ratio", node="gpu02", **PINNED_H2D)
        for got, expected, what in ((value, pinned02["value"] * 1e9, "value"), (low, pinned02["expected"]["low"] * 1e9, "band low"),
                                    (high, pinned02["expected"]["high"] * 1e9, "band high"),
                                    (tolerance, pinned02["tolerance"], "tolerance")):
            if abs(got - expected) > 1e-12 * abs(expected):
                fail(f"node_exporter: gpu02 pinned h2d {what} {got}, check.json says {expected}")
        if one(scraped, "hdbench_figure_warn_runs", node="gpu03", **PINNED_H2D) != 1:
            fail("node_exporter: gpu03's pinned h2d is not 1 WARN run")
        if one(scraped, "hdbench_node_measured_timestamp_seconds", node="gpu04") != week_old.timestamp():
            fail("node_exporter: gpu04's measured time is not its meta.json's")
        kinds = {l["kind"] for n, l, _ in scraped if n == "hdbench_node_grade"}
        print(f"node_exporter /metrics: {len([s for s in scraped if s[0].startswith('hdbench_')])} hdbench samples; "
              f"kind {sorted(kinds)}; gpu02 pinned h2d {value / 1e9:.2f} GB/s outside {low / 1e9:.2f}-{high / 1e9:.2f} "
              f"(check.json's), grade 2")
        for line in http_get(exporter).splitlines():
            if line.startswith("hdbench_node_grade") or (line.startswith("hdbench_figure_grade") and 'figure="pinned h2d 1 GiB"' in line):
                print(f"  {line}")

        config = os.path.join(work, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                    f"rule_files:\n  - {os.path.abspath(args.alerts)}\n"
                    "scrape_configs:\n  - job_name: node\n"
                    f"    static_configs:\n      - targets: ['127.0.0.1:{exporter_port}']\n")
        prometheus_log = open(os.path.join(work, "prometheus.log"), "w")
        logs.append(prometheus_log)
        processes["prometheus"] = subprocess.Popen(
            [tools["prometheus"], f"--config.file={config}", f"--storage.tsdb.path={os.path.join(work, 'tsdb')}",
             f"--web.listen-address=127.0.0.1:{prometheus_port}"],
            stdout=prometheus_log, stderr=subprocess.STDOUT, cwd=work)
        base = f"http://127.0.0.1:{prometheus_port}"
        graded = wait_for("hdbench_node_grade of 4 nodes in Prometheus",
                          lambda: (lambda r: r if len(r) == 4 else None)(query(base, "hdbench_node_grade")), processes)
        by_node = {r["metric"]["node"]: float(r["value"][1]) for r in graded}
        if by_node != {n: float(g) for n, g in want.items()}:
            fail(f"Prometheus: hdbench_node_grade {by_node}")
        failing = query(base, 'hdbench_figure_grade{node="gpu02"} == 2')
        if not any(r["metric"]["figure"] == "pinned h2d 1 GiB" for r in failing):
            fail(f"Prometheus: gpu02's FAIL figures {[r['metric']['figure'] for r in failing]}")
        # The alerts of the first run: gpu02 FAILs, gpu04 is stale, gpu03's one WARN run is not an alert.
        alerts = wait_for("HdbenchNodeFail and HdbenchVerdictStale firing",
                          lambda: (lambda a: a if {x["labels"]["alertname"] for x in a} >= {"HdbenchNodeFail", "HdbenchVerdictStale"}
                                   else None)(firing(base)), processes)
        names = sorted((a["labels"]["alertname"], a["labels"].get("node")) for a in alerts)
        if names != [("HdbenchNodeFail", "gpu02"), ("HdbenchVerdictStale", "gpu04")]:
            fail(f"Prometheus alerts after one run: {names}")
        print(f"Prometheus: hdbench_node_grade {by_node}; firing {names}")
        for a in alerts:
            print(f"  {a['labels']['alertname']}: {a['annotations']['summary']}")

        # 3. A second run of every node (a new measured time), gpu03 WARN again: two runs in a row.
        for d in dirs[:3]:
            set_measured(d, now)
        run(fleet + ["--out", os.path.join(work, "out2")], expect=1)
        _, text, _ = run(fleet + ["--out", os.path.join(work, "out3")], expect=1)  # the same runs again: one run
        if one(samples(text), "hdbench_figure_warn_runs", node="gpu03", **PINNED_H2D) != 2:
            fail("after two WARN runs (and the second graded twice) gpu03's pinned h2d is not 2 WARN runs")

        def warn_series(exposition):
            return {(l["node"], l["figure"], l["gpu"]) for n, l, v in samples(exposition) if n == "hdbench_figure_grade" and v == 1}
        twice = warn_series(first_run) & warn_series(text)
        if ("gpu03", "pinned h2d 1 GiB", "0") not in twice:
            fail(f"gpu03's pinned h2d not WARN in both runs: {sorted(twice)}")
        # Exactly the figures WARN in both runs alert, once the second run is scraped.
        alerts = wait_for("HdbenchFigureWarnTwice firing for every figure WARN in both runs",
                          lambda: (lambda a: a if {(x["labels"]["node"], x["labels"]["figure"], x["labels"]["gpu"]) for x in a} >= twice
                                   else None)([a for a in firing(base) if a["labels"]["alertname"] == "HdbenchFigureWarnTwice"]),
                          processes)
        warned = sorted((a["labels"]["node"], a["labels"]["figure"], a["labels"]["gpu"]) for a in alerts)
        if set(warned) != twice:
            fail(f"HdbenchFigureWarnTwice fired for {warned}, the figures WARN in both runs are {sorted(twice)}")
        print(f"second WARN run: HdbenchFigureWarnTwice firing for {warned}")
        print(f"  {alerts[0]['annotations']['summary']}")
    except BaseException:
        for log in logs:
            log.flush()
        for name in ("node_exporter.log", "prometheus.log"):
            path = os.path.join(work, name)
            if os.path.exists(path):
                with open(path) as f:
                    print(f"--- {name} (last lines)\n" + "".join(f.readlines()[-20:]), file=sys.stderr)
        raise
    finally:
        stop(processes, logs)
    print(f"done in {time.monotonic() - started:.1f} s")


if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# On a GPU node: the GPU's own health record as its driver prints it, in the forms hdbench reads
# (harness/src/data/gpu_health.cpp), so that real output can replace or join the hand-written
# fixtures of tests/harness/fixtures/gpu_health/ (its README.md says which file is which), and what
# each read costs, which is what a run pays for it at its start and its end.
#
#   tools/capture_health_fixtures.sh [OUT]     OUT: default $OUT (the device machine's folder)
#   HDBENCH=build/native/bin/hdbench tools/capture_health_fixtures.sh OUT   also a verdict run's own record
#
# OUT gets:
#   version.txt, help-query-gpu.txt   nvidia-smi --version; --help-query-gpu (the fields this driver knows)
#   q.txt                             nvidia-smi -q (ECC, retired pages, remapped rows and the bank histogram, fabric)
#   query.csv, query.status           the record's --query-gpu (the fields of gpu_record_fields()): what it
#                                     printed (a refusal too), its exit status and stderr
#   query-<field>.csv                 each field alone with uuid, where the whole query was refused
#   nvlink-e.txt                      nvidia-smi nvlink -e
#   kmsg-nvrm.txt, kmsg-tail.txt      /dev/kmsg records (prio,seq,usec,flags;message) of the driver (NVRM), and the
#                                     last 40 of any kind; kmsg.status: dd's account of the read (or why none)
#   journal-nvrm.txt, journal.status  the same lines from journalctl -k (this boot)
#   timings.txt                       milliseconds of each read, three times
#   run/ (with HDBENCH)               meta.json's "health", check.txt and check.json of `hdbench run --verdict`
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
out=${1:-${OUT:?usage: tools/capture_health_fixtures.sh OUT (or set OUT)}}
mkdir -p "$out"
command -v nvidia-smi >/dev/null || { echo "capture_health_fixtures.sh: no nvidia-smi on PATH" >&2; exit 2; }

# The record's fields, read from the one list hdbench asks for, so the two never differ.
fields=$(sed -n '/^const std::vector<std::string>& gpu_record_fields() {/,/^}/p' harness/src/data/gpu_health.cpp |
         grep -o '"[a-z_.]*"' | tr -d '"' | paste -sd, -)
[ -n "$fields" ] || { echo "capture_health_fixtures.sh: no field list in harness/src/data/gpu_health.cpp" >&2; exit 2; }

ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

nvidia-smi --version >"$out/version.txt" 2>&1
nvidia-smi --help-query-gpu >"$out/help-query-gpu.txt" 2>&1
nvidia-smi -q >"$out/q.txt" 2>&1
nvidia-smi nvlink -e >"$out/nvlink-e.txt" 2>&1
nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits >"$out/query.csv" 2>"$out/query.stderr"
status=$?
{ echo "fields: $fields"; echo "exit: $status"; cat "$out/query.stderr"; } >"$out/query.status"
rm -f "$out/query.stderr"
if [ "$status" -ne 0 ]; then  # a driver that refuses a field: what each field alone says
  for field in ${fields//,/ }; do
    [ "$field" = uuid ] && continue
    nvidia-smi --query-gpu="uuid,$field" --format=csv,noheader,nounits >"$out/query-$field.csv" 2>&1
  done
fi

# /dev/kmsg read as hdbench reads it: non-blocking, one record a read, until it has no more
# (dd then says "Resource temporarily unavailable", which is the end, not an error).
kmsg_read() { dd if=/dev/kmsg iflag=nonblock bs=16384 2>"$1"; }
kmsg_read "$out/kmsg.status" >"$out/kmsg-all.txt"
grep -a 'NVRM' "$out/kmsg-all.txt" >"$out/kmsg-nvrm.txt" 2>/dev/null
tail -n 40 "$out/kmsg-all.txt" >"$out/kmsg-tail.txt" 2>/dev/null
rm -f "$out/kmsg-all.txt"
journalctl -k -b -q --no-pager -o cat 2>"$out/journal.status" | grep -a 'NVRM' >"$out/journal-nvrm.txt"
echo "exit: ${PIPESTATUS[0]}" >>"$out/journal.status"

{
  echo "# milliseconds per read (three tries): what a run adds at its start and its end"
  for try in 1 2 3; do
    t=$(date +%s%N); nvidia-smi -q >/dev/null 2>&1; q=$(ms_since "$t")
    t=$(date +%s%N); nvidia-smi nvlink -e >/dev/null 2>&1; e=$(ms_since "$t")
    t=$(date +%s%N); nvidia-smi --query-gpu="$fields" --format=csv,noheader,nounits >/dev/null 2>&1; r=$(ms_since "$t")
    t=$(date +%s%N); kmsg_read /dev/null >/dev/null; k=$(ms_since "$t")
    echo "try $try: nvidia-smi -q ${q} ms, nvlink -e ${e} ms, record query ${r} ms, all of /dev/kmsg ${k} ms"
  done
} >"$out/timings.txt"

if [ -n "${HDBENCH:-}" ]; then
  mkdir -p "$out/run"
  "$HDBENCH" run --verdict --confirm=off --out "$out/run/results" --run-dir-file "$out/run/dir" >"$out/run/console.log" 2>&1
  echo "exit: $?" >>"$out/run/console.log"
  if run_dir=$(cat "$out/run/dir" 2>/dev/null); then
    python3 -c 'import json, sys; print(json.dumps(json.load(open(sys.argv[1]))["health"], indent=2))' \
      "$run_dir/meta.json" >"$out/run/health.json" 2>&1
    cp "$run_dir/check.txt" "$run_dir/check.json" "$out/run/" 2>/dev/null
    rm -rf "$out/run/results"  # the figures are not what this captures
  fi
fi
ls -l "$out"

#!/usr/bin/env bash
# install_test.sh BUILD_DIR SOURCE_DIR PYTHON BUILD_BENCH
# Installs BUILD_DIR into a scratch prefix, moves the prefix (so no path recorded at configure or
# install time is valid), and checks that the moved hdbench runs, draws the plots of a copy of the
# h200 reference with its own plot scripts and grades it against its own reference sets.
set -euo pipefail
build=$1 source=$2 python=$3 bench=$4
if [ -z "$python" ]; then
  echo "install test: no Python with matplotlib and numpy (install python3-matplotlib)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
unset HDBENCH_PLOTS_DIR HDBENCH_REFERENCE_DIR PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX
export HDBENCH_PYTHON=$python MPLBACKEND=Agg MPLCONFIGDIR=$work/mplconfig

cmake --install "$build" --prefix "$work/staged" > "$work/install.log"
mv "$work/staged" "$work/moved"
prefix=$work/moved
expected=(bin/hdbench bin/suite.json bin/schema/copy.json
          share/hdbench/plots/plot_run.py share/hdbench/plots/hdbplots/figures.py
          share/hdbench/reference/h200/noise.json share/doc/hdbench/README.md share/doc/hdbench/docs/teaching.md
          share/hdbench/hdbench-alerts.yml
          share/hdbench/hdbench-fleet.sbatch share/hdbench/hdbench-healthcheck)
# A harness-only configuration (-DHDB_BUILD_BENCH=OFF) builds no probe and no family.
[ "$bench" = ON ] && expected+=(bin/hdbench-probe bin/hdbench-copy)
for f in "${expected[@]}"; do
  [ -e "$prefix/$f" ] || { echo "install test: $f is not installed" >&2; exit 1; }
done
# The Slurm scripts run as they are (sbatch, slurmd's HealthCheckProgram): executable as installed.
for f in share/hdbench/hdbench-fleet.sbatch share/hdbench/hdbench-healthcheck; do
  [ -x "$prefix/$f" ] || { echo "install test: $f is installed without its execute bit" >&2; exit 1; }
done

# The installed docs keep the repository's layout: every link and image in them resolves, the
# reference figures through results/reference, a relative link to the installed sets.
"$python" "$source/tests/docs/check_links.py" --root "$prefix/share/doc/hdbench" ||
  { echo "install test: the installed docs have broken links" >&2; exit 1; }

"$prefix/bin/hdbench" --version

run=$work/run
mkdir "$run"
cp "$source/results/reference/h200/results.csv" "$source/results/reference/h200/meta.json" "$run/"
"$prefix/bin/hdbench" plot "$run"
pngs=$(find "$run/plots" -name '*.png' | wc -l)
[ "$pngs" -gt 0 ] || { echo "install test: hdbench plot wrote no PNG" >&2; exit 1; }
# Python leaves bytecode beside the modules it imported: proof that the installed copy drew them.
[ -d "$prefix/share/hdbench/plots/hdbplots/__pycache__" ] ||
  { echo "install test: the plots were not drawn by $prefix/share/hdbench/plots" >&2; exit 1; }
echo "install test: $pngs PNG files"

"$prefix/bin/hdbench" check "$run" --format json > "$work/check.json"
grep -q "\"dir\": \"$prefix/share/hdbench/reference/h200\"" "$work/check.json" ||
  { echo "install test: check did not grade against $prefix/share/hdbench/reference/h200" >&2; exit 1; }
echo "install test: relocated prefix OK"

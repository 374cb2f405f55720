#!/usr/bin/env bash
# One short run on a lent GPU (docs/validation.md, "One chip"): what the machine runs, `shardc
# calibrate` with every case, and the programs of benchmarks/one_chip/ timed statement by statement
# by the scripts `shardc export-jax` writes for them.
#
#   benchmarks/device_one_chip.sh HW OUT            # on the GPU (a few minutes)
#   benchmarks/device_one_chip.sh HW OUT --cpu      # the same steps on the CPU, tiny calibration
#
# Writes OUT/env.txt, OUT/HW.toml (the calibration), OUT/calibrate.txt (its residuals),
# OUT/calibrate.err and OUT/programs.txt. Needs shardc and JAX. ONE_CHIP_PROGRAMS=DIR times
# the programs of DIR instead.
set -u
hw=$1
out=$2
shift 2
cpu=()
quick=()
if [ "${1:-}" = "--cpu" ]; then
    cpu=(--cpu)
    quick=(--quick)
    export JAX_PLATFORMS=cpu
fi
mkdir -p "$out"
scripts=$(mktemp -d)
{
    nvidia-smi --query-gpu=name,driver_version,power.limit,clocks.max.sm,memory.total \
        --format=csv 2>&1 || echo "no nvidia-smi"
    python3 -c 'import sys, jax, jaxlib; print("python", sys.version.split()[0]);
print("jax", jax.__version__, "jaxlib", jaxlib.__version__); print(jax.devices())'
} >"$out/env.txt" 2>&1
python3 -m shardc calibrate --hw "$hw" "${cpu[@]}" "${quick[@]}" -o "$out/$hw.toml" \
    >"$out/calibrate.txt" 2>"$out/calibrate.err"
echo "calibrate: exit $?" >>"$out/env.txt"
for prog in "${ONE_CHIP_PROGRAMS:-benchmarks/one_chip}"/*.shard; do
    name=$(basename "$prog" .shard)
    echo "## $name" >>"$out/programs.txt"
    python3 -m shardc export-jax "$prog" --hw "$hw" -o "$scripts/$name.py" 2>>"$out/programs.txt"
    python3 "$scripts/$name.py" --repeat 10 "${cpu[@]}" >>"$out/programs.txt" 2>&1
done
echo "done" >>"$out/env.txt"

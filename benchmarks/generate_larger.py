"""The larger model of issue 60's agreement check: a GPT-2-small-sized model (124M parameters,
random weights from `GPT2Config`, seeded: nothing is downloaded) serving the prompt lengths of
samples/generate.py, as `benchmarks/generate_by_hand.py --larger` serves them by hand.

    tcdoctor analyze benchmarks/generate_larger.py:build --backend eager --threads 1 --no-warm \\
        --processes 1 --no-fixes --no-dynamic --budget 0.3 --no-submodules --json r.json
    python benchmarks/generate_by_hand.py --larger --paired --backend eager

The model and prompts are the by-hand script's own (the same seed, config and lengths), so both
replay the same traffic in their own processes; `--paired` serves it as the report's paired record
does: compare its figures with the JSON's paired record (serving.generation.steady and
paired_eager), of one moment each.
"""

import sys
from pathlib import Path

import tcdoctor

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate_by_hand import gpt2_small, prompts  # noqa: E402

NEW_TOKENS = 12


def build():
    model, vocab = gpt2_small()
    return tcdoctor.Generation(model, prompts=prompts(vocab), max_new_tokens=NEW_TOKENS)

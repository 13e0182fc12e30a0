#!/usr/bin/env python3
"""Write a model folder with a real model's shape and no weights, for `--load-format dummy`.

The tokenizer is make_tiny_model.py's (a 1024-token BPE); config.json takes the shape given here
(Llama-3-8B's by default) with the tokenizer's vocabulary, so every token id the model can emit
decodes. SGLang fills the weights with random values on the GPU at start-up, so nothing large
is written or carried.
"""
import argparse
import json
import pathlib
import runpy
import sys

ROOT = pathlib.Path(__file__).resolve().parents[3]
TINY = ROOT / "roles" / "local_engine" / "files" / "make_tiny_model.py"


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", type=pathlib.Path)
    parser.add_argument("--hidden-size", type=int, default=4096)
    parser.add_argument("--intermediate-size", type=int, default=14336)
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--kv-heads", type=int, default=8)
    parser.add_argument("--max-positions", type=int, default=4096)
    args = parser.parse_args()

    sys.argv = [str(TINY), str(args.output)]
    runpy.run_path(str(TINY), run_name="__main__")
    for weights in args.output.glob("*.safetensors*"):
        weights.unlink()
    config_path = args.output / "config.json"
    config = json.loads(config_path.read_text())
    config.update(hidden_size=args.hidden_size, intermediate_size=args.intermediate_size,
                  num_hidden_layers=args.layers, num_attention_heads=args.heads,
                  num_key_value_heads=args.kv_heads, head_dim=args.hidden_size // args.heads,
                  max_position_embeddings=args.max_positions, tie_word_embeddings=False)
    config_path.write_text(json.dumps(config, indent=2))
    params = config["vocab_size"] * args.hidden_size * 2 + args.layers * (
        2 * args.hidden_size * args.hidden_size
        + 2 * args.hidden_size * (args.hidden_size // args.heads) * args.kv_heads
        + 3 * args.hidden_size * args.intermediate_size)
    print("shape: %d layers, hidden %d, %d/%d heads, %.2f B parameters (%.1f GB in bf16)"
          % (args.layers, args.hidden_size, args.heads, args.kv_heads, params / 1e9, params * 2 / 1e9))


if __name__ == "__main__":
    main()

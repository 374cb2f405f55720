"""Model cards: the architecture of a named model (LLaMA 3 70B, DeepSeek-V3, ...) as TOML data.

Shipped cards are `dsl/tools/models/cards/*.toml`, found with importlib.resources so that a wheel
install works; a path to a TOML of the same form loads a card of one's own. Programs generated
from a card are in `shardc.tools.models.programs`; the numbers derived from their compiled reports
(parameters, FLOPs per token, KV cache) in `shardc.tools.models.counts`.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from shardc.lang.numeric import MAX_INTEGER, NumberError, parse_decimal, whole
from shardc.lang.quoting import quoted

__all__ = [
    "MLA",
    "ModelCard",
    "ModelError",
    "MoE",
    "Reference",
    "available",
    "from_config",
    "load",
    "load_text",
]


class ModelError(Exception):
    """A card that cannot be loaded: unknown name, unreadable or invalid TOML, a bad field."""


@dataclass(frozen=True, slots=True)
class MoE:
    """A mixture of experts: `n_experts` routed experts of which each token uses `n_active`,
    plus `n_shared` experts every token uses; the first `first_dense_layers` layers are dense."""

    n_experts: int
    n_active: int
    n_shared: int
    d_ff_expert: int
    first_dense_layers: int


@dataclass(frozen=True, slots=True)
class MLA:
    """Multi-head latent attention's sizes (DeepSeek); see the card for what is approximated."""

    q_lora_rank: int
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int


@dataclass(frozen=True, slots=True)
class Reference:
    """A figure the book states (`params`, `active_params`, ...) and where it says it."""

    quantity: str
    value: float
    source: str


@dataclass(frozen=True, slots=True)
class ModelCard:
    """One model's architecture and training setup, in the book's letters (the LLaMA 3 chapter
    table): L = n_layers, D = d_model, F = d_ff, N = n_heads, K = n_kv_heads, H = d_head,
    V = vocab."""

    name: str
    display_name: str
    n_layers: int
    d_model: int
    d_ff: int
    n_heads: int
    n_kv_heads: int
    d_head: int
    vocab: int
    mlp: str  # "gated" (three matrices) or "plain" (two)
    activation: str
    tied_embeddings: bool
    seq_len: int
    path: str
    batch_tokens: int | None = None
    tokens: float | None = None
    moe: MoE | None = None
    mla: MLA | None = None
    aliases: tuple[str, ...] = ()
    reference: tuple[Reference, ...] = ()

    @property
    def groups(self) -> int:
        """G: query heads per KV head (N = K * G)."""
        return self.n_heads // self.n_kv_heads

    def reference_value(self, quantity: str) -> Reference | None:
        return next((r for r in self.reference if r.quantity == quantity), None)


# The tables a card holds, each key with its type (card_schema builds the cards' JSON Schema
# from these).
ARCHITECTURE_FIELDS = {
    "n_layers": int,
    "d_model": int,
    "d_ff": int,
    "n_heads": int,
    "n_kv_heads": int,
    "d_head": int,
    "vocab": int,
    "mlp": str,
    "activation": str,
    "tied_embeddings": bool,
}
MOE_FIELDS = {
    "n_experts": int,
    "n_active": int,
    "n_shared": int,
    "d_ff_expert": int,
    "first_dense_layers": int,
}
MLA_FIELDS = {
    "q_lora_rank": int,
    "kv_lora_rank": int,
    "qk_nope_head_dim": int,
    "qk_rope_head_dim": int,
    "v_head_dim": int,
}
TRAINING_FIELDS = {"seq_len": int, "batch_tokens": int, "tokens": float}
_TOP = {"name", "display_name", "aliases", "architecture", "moe", "mla", "training", "reference"}
ACTIVATIONS = ("silu", "gelu", "relu")


def available() -> list[str]:
    """The names of the shipped cards, sorted.

    >>> "llama3-70b" in available()
    True
    """
    return sorted(_shipped())


def load(name_or_path: str) -> ModelCard:
    """A shipped card by name or alias (`llama3-70b`), a card TOML by path, or a Hugging Face
    config.json by path (`from_config`).

    >>> load("llama3-70b").d_ff
    28672
    """
    shipped = _shipped()
    if name_or_path.endswith((".toml", ".json")) or "/" in name_or_path:
        from shardc.driver.files import CliIOError, read_text
        from shardc.lang.input_limits import MAX_CONFIG_BYTES

        try:
            text = read_text(name_or_path, what="model card", limit=MAX_CONFIG_BYTES)
        except CliIOError as exc:
            raise ModelError(str(exc)) from None
        if name_or_path.endswith(".json"):
            return from_config(text, str(Path(name_or_path)))
        return _build(text, str(Path(name_or_path)))
    key = name_or_path.strip().lower()
    if key not in shipped:
        for stem, res in shipped.items():
            if key in (a.lower() for a in _aliases(res.read_text(encoding="utf-8"))):
                key = stem
                break
    if key not in shipped:
        close = difflib.get_close_matches(key, list(shipped), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise ModelError(
            f"unknown model {name_or_path!r}{hint} (known: {', '.join(sorted(shipped))})"
        )
    res = shipped[key]
    return _build(res.read_text(encoding="utf-8"), f"dsl/tools/models/cards/{key}.toml")


def _shipped() -> dict[str, Any]:
    root = files("shardc.tools.models") / "cards"
    return {r.name[: -len(".toml")]: r for r in root.iterdir() if r.name.endswith(".toml")}


def _aliases(text: str) -> list[str]:
    try:
        aliases = tomllib.loads(text).get("aliases", [])
    except tomllib.TOMLDecodeError:
        return []
    return [a for a in aliases if isinstance(a, str)] if isinstance(aliases, list) else []


def load_text(text: str, path: str) -> ModelCard:
    """A card from a card TOML's text (`path` names it in messages)."""
    return _build(text, path)


def from_config(text: str, path: str) -> ModelCard:
    """A card from a Hugging Face config.json's text (`shardc.tools.models.hf_config`), checked
    as a card file is."""
    from shardc.tools.models.hf_config import ConfigError, card_document

    try:
        doc = card_document(text, path)
    except ConfigError as exc:
        raise ModelError(str(exc)) from None
    return _from_document(doc, path)


def _build(text: str, path: str) -> ModelCard:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ModelError(f"{path}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ModelError(f"{path}: invalid TOML: arrays or tables nested too deeply") from None
    return _from_document(doc, path)


def _from_document(doc: dict[str, Any], path: str) -> ModelCard:
    unknown = set(doc) - _TOP
    if unknown:
        raise ModelError(
            f"{path}: unknown key {quoted(sorted(unknown)[0])} (expected {', '.join(sorted(_TOP))})"
        )
    for key in ("name", "architecture", "training"):
        if key not in doc:
            raise ModelError(f"{path}: missing {key!r}")
    _check_top(doc, path)
    arch = _table(
        doc, "architecture", ARCHITECTURE_FIELDS, path, required=tuple(ARCHITECTURE_FIELDS)
    )
    training = _table(doc, "training", TRAINING_FIELDS, path, required=("seq_len",))
    moe = (
        MoE(**_table(doc, "moe", MOE_FIELDS, path, required=tuple(MOE_FIELDS)))
        if "moe" in doc
        else None
    )
    mla = (
        MLA(**_table(doc, "mla", MLA_FIELDS, path, required=tuple(MLA_FIELDS)))
        if "mla" in doc
        else None
    )
    card = ModelCard(
        name=doc["name"],
        display_name=doc.get("display_name", doc["name"]),
        **arch,
        seq_len=training["seq_len"],
        batch_tokens=training.get("batch_tokens"),
        tokens=training.get("tokens"),
        moe=moe,
        mla=mla,
        path=path,
        aliases=tuple(doc.get("aliases", [])),
        reference=_references(doc.get("reference", {}), path),
    )
    _check(card, path)
    return card


def _check_top(doc: dict[str, Any], path: str) -> None:
    """The card's top-level fields by type, as card.schema.json states them: `name` a non-empty
    string, `display_name` a string, `aliases` a list of non-empty strings."""
    name = doc["name"]
    if not isinstance(name, str) or not name.strip():
        raise ModelError(f"{path}: name must be a non-empty string, got {_described(name)}")
    if "display_name" in doc and not isinstance(doc["display_name"], str):
        raise ModelError(
            f"{path}: display_name must be a string, got {_described(doc['display_name'])}"
        )
    aliases = doc.get("aliases", [])
    if not isinstance(aliases, list):
        raise ModelError(
            f'{path}: aliases must be a list of names (["llama-3-70b"]), got {_described(aliases)}'
        )
    for a in aliases:
        if not isinstance(a, str) or not a.strip():
            raise ModelError(
                f"{path}: aliases: each alias must be a non-empty string, got {_described(a)}"
            )


def _described(value: Any) -> str:
    """A TOML value's type and (at most 120 characters of) its text, for a message."""
    names = {
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        list: "array",
        dict: "table",
    }
    return f"{names.get(type(value), type(value).__name__)} {quoted(value)}"


def _number_text(text: str, kind: type, where: str) -> int | float:
    """A number a card writes as text (`batch_tokens = "4Mi"`, `tokens = "15T"`), read as the
    command line reads `--batch` and `--tokens` (`shardc.lang.numeric`): a whole number of
    tokens from 1 to 2**63 - 1."""
    try:
        n = whole(parse_decimal(text), where)
    except NumberError as exc:
        raise ModelError(f"{where} = {quoted(text)}: {exc}") from None
    return n if kind is int else float(n)


def _table(
    doc: dict[str, Any], name: str, spec: Mapping[str, type], path: str, required: tuple[str, ...]
) -> dict[str, Any]:
    table = doc.get(name, {})
    if not isinstance(table, dict):
        raise ModelError(f"{path}: [{name}] must be a table")
    out: dict[str, Any] = {}
    for key, value in table.items():
        if key not in spec:
            close = difflib.get_close_matches(key, list(spec), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ModelError(f"{path}: [{name}] has an unknown key {quoted(key)}{hint}")
        kind = spec[key]
        if name == "training" and isinstance(value, str):
            value = _number_text(value, kind, f"{path}: [{name}] {key}")
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            if not _finite(value):
                raise ModelError(f"{path}: [{name}] {key} must be a finite number")
            if name == "training":  # a token count: whole, at most 2**63 - 1, as --tokens
                try:
                    value = float(whole(value, f"[{name}] {key}"))
                except NumberError as exc:
                    raise ModelError(f"{path}: {exc}") from None
            value = float(value)
        elif kind is int and isinstance(value, float) and value.is_integer():
            value = int(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise ModelError(
                f"{path}: [{name}] {key} = {quoted(value)} is not a {_TYPE_NAMES[kind]}"
            )
        if kind is int and isinstance(value, int) and value > MAX_INTEGER:
            raise ModelError(
                f"{path}: [{name}] {key} = {quoted(value)} is larger than the limit 2**63 - 1"
            )
        if (
            isinstance(value, int | float)
            and not isinstance(value, bool)
            and value <= 0
            and key not in ("first_dense_layers", "n_shared")
        ):
            raise ModelError(f"{path}: [{name}] {key} = {value!r} must be positive")
        out[key] = value
    for key in required:
        if key not in out:
            raise ModelError(f"{path}: [{name}] is missing {key!r}")
    return out


_TYPE_NAMES = {int: "whole number", float: "number", str: "string", bool: "boolean"}


def _finite(value: float) -> bool:
    """A finite float: not inf or nan, and (for a TOML integer) small enough to convert."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _references(table: Any, path: str) -> tuple[Reference, ...]:
    if not isinstance(table, dict):
        raise ModelError(f"{path}: [reference] must be a table")
    out = []
    for quantity, entry in table.items():
        value = entry.get("value") if isinstance(entry, dict) else None
        if (
            not isinstance(value, int | float)
            or isinstance(value, bool)
            or not _finite(value)
            or value <= 0
        ):
            raise ModelError(
                f"{path}: [reference] {quoted(quantity)} needs a positive, finite numeric 'value'"
            )
        extra = sorted(set(entry) - {"value", "source"})
        if extra:
            raise ModelError(
                f"{path}: [reference] {quoted(quantity)} has an unknown key "
                f"{quoted(extra[0])} (expected value, source)"
            )
        source = entry.get("source", "")
        if not isinstance(source, str):
            raise ModelError(
                f"{path}: [reference] {quoted(quantity)} source must be a string, "
                f"got {_described(source)}"
            )
        out.append(Reference(quantity, float(value), source))
    return tuple(out)


def _check(card: ModelCard, path: str) -> None:
    if card.mlp not in ("gated", "plain"):
        raise ModelError(
            f"{path}: [architecture] mlp = {card.mlp!r}: expected 'gated' "
            "(three matrices) or 'plain' (two)"
        )
    if card.activation not in ACTIVATIONS:
        raise ModelError(
            f"{path}: [architecture] activation = {card.activation!r}: expected "
            f"one of {', '.join(ACTIVATIONS)}"
        )
    if card.n_heads % card.n_kv_heads:
        raise ModelError(
            f"{path}: n_heads = {card.n_heads} is not a multiple of n_kv_heads = "
            f"{card.n_kv_heads} (grouped-query attention shares each KV head "
            "among n_heads / n_kv_heads query heads)"
        )
    if card.moe is not None:
        m = card.moe
        if m.n_active > m.n_experts:
            raise ModelError(
                f"{path}: [moe] n_active = {m.n_active} exceeds n_experts = {m.n_experts}"
            )
        if m.first_dense_layers >= card.n_layers:
            raise ModelError(
                f"{path}: [moe] first_dense_layers = {m.first_dense_layers} leaves "
                f"no MoE layer of {card.n_layers}"
            )

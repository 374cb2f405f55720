"""The JSON Schema of model cards (`dsl/tools/models/card.schema.json`, `shardc model schema`):
generated from the loader's field tables, shipped equal to what the generator gives, followed
by every shipped card, and in agreement with the loader on edited cards."""

from __future__ import annotations

import copy
import json
import tomllib
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import jsonschema
import pytest

from shardc.cli.app import main
from shardc.tools import models
from shardc.tools.models.card_schema import SHIPPED, card_json_schema, card_json_schema_text
from tests.toml_text import to_toml

SCHEMA = card_json_schema()
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)
CARDS = files("shardc.tools.models") / "cards"


def card(name: str) -> dict[str, Any]:
    return tomllib.loads((CARDS / f"{name}.toml").read_text(encoding="utf-8"))


def test_the_shipped_file_is_the_generated_schema() -> None:
    shipped = files("shardc.tools.models").joinpath(SHIPPED).read_text(encoding="utf-8")
    assert shipped == card_json_schema_text(), (
        "dsl/tools/models/card.schema.json is stale: regenerate it with "
        "`shardc model schema > dsl/tools/models/card.schema.json`"
    )


def test_it_is_a_valid_schema_in_both_drafts() -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_shardc_model_schema_prints_it(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", "schema"]) == 0
    assert json.loads(capsys.readouterr().out) == SCHEMA


@pytest.mark.parametrize("name", models.available())
def test_every_shipped_card_follows_it(name: str) -> None:
    assert list(VALIDATOR.iter_errors(card(name))) == []


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    table, _, key = path.rpartition(".")

    def edit(doc: dict[str, Any]) -> None:
        (doc[table] if table else doc)[key] = value

    return edit


def _drop(path: str) -> Callable[[dict[str, Any]], None]:
    table, _, key = path.rpartition(".")

    def edit(doc: dict[str, Any]) -> None:
        del (doc[table] if table else doc)[key]

    return edit


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], bool]] = {
    "no name": (_drop("name"), False),
    "no architecture": (_drop("architecture"), False),
    "no n_layers": (_drop("architecture.n_layers"), False),
    "zero layers": (_set("architecture.n_layers", 0), False),
    "layers as text": (_set("architecture.n_layers", "eighty"), False),
    "a misspelled key": (_set("architecture.n_layer", 80), False),
    "an unknown table": (_set("optimizer", {"kind": "adam"}), False),
    "an unknown mlp": (_set("architecture.mlp", "swiglu"), False),
    "an unknown activation": (_set("architecture.activation", "swish"), False),
    "tied as text": (_set("architecture.tied_embeddings", "yes"), False),
    "no seq_len": (_drop("training.seq_len"), False),
    "a batch as text": (_set("training.batch_tokens", "4Mi"), True),
    "tokens as text": (_set("training.tokens", "15T"), True),
    "a negative batch": (_set("training.batch_tokens", -1), False),
    "a reference without value": (_set("reference", {"params": {"source": "x"}}), False),
    "a reference": (_set("reference", {"params": {"value": 7e10, "source": "x"}}), True),
    "no display name": (_drop("display_name"), True),
}


@pytest.mark.parametrize("what", list(EDITS))
def test_the_loader_and_the_schema_agree(what: str, tmp_path) -> None:
    edit, valid = EDITS[what]
    doc = copy.deepcopy(card("llama3-70b"))
    edit(doc)
    assert tomllib.loads(to_toml(doc)) == doc
    assert (list(VALIDATOR.iter_errors(doc)) == []) is valid
    path = tmp_path / "card.toml"
    path.write_text(to_toml(doc))
    if valid:
        models.load(str(path))
    else:
        with pytest.raises(models.ModelError):
            models.load(str(path))

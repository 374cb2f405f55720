"""The VS Code extension (editors/vscode): its manifest names the language, the file extension
and the grammar that grammar/shard.tmLanguage.json is, starts `shardc lsp` with flags the server
takes, and, once CI has packaged it (`npm run package`, .ci/run), the .vsix holds a copy of the
grammar identical to its one home."""

from __future__ import annotations

import json
import re
import zipfile

import pytest

from shardc.cli.app import build_parser
from tests.paths import ROOT

EXTENSION = ROOT / "editors" / "vscode"
GRAMMAR = ROOT / "grammar" / "shard.tmLanguage.json"


def manifest() -> dict:
    return json.loads((EXTENSION / "package.json").read_text(encoding="utf-8"))


def test_the_manifest_names_the_language_and_the_grammar():
    m = manifest()
    grammar = json.loads(GRAMMAR.read_text(encoding="utf-8"))
    (language,) = m["contributes"]["languages"]
    (entry,) = m["contributes"]["grammars"]
    assert language["extensions"] == [f".{e}" for e in grammar["fileTypes"]]
    assert entry["language"] == language["id"] == "shard"
    assert entry["scopeName"] == grammar["scopeName"]
    assert entry["path"] == "./syntaxes/" + GRAMMAR.name
    config = json.loads((EXTENSION / language["configuration"]).read_text(encoding="utf-8"))
    comment = grammar["repository"]["comment"]["match"]
    assert re.match(comment, config["comments"]["lineComment"] + " a comment")


def test_the_client_starts_the_server_with_flags_it_takes():
    source = (EXTENSION / "extension.js").read_text(encoding="utf-8")
    args = re.search(r"args: \[([^\]]*)\]", source).group(1)
    words = re.findall(r"^\s*'([-\w]+)'", args.replace(",", "\n"), re.M)
    flags = [w for w in words if w.startswith("-")]
    assert words[0] == "lsp" and flags == ["--time-budget"]
    lsp = build_parser()._subparsers._group_actions[0].choices["lsp"]
    known = {o for a in lsp._actions for o in a.option_strings}
    assert set(flags) <= known, set(flags) - known
    settings = manifest()["contributes"]["configuration"]["properties"]
    assert {"shardc.command", "shardc.timeBudget"} <= set(settings)


def test_the_packaged_extension_ships_the_grammar():
    vsix = EXTENSION / "shardc.vsix"
    if not vsix.exists():
        pytest.skip("editors/vscode/shardc.vsix is built by `npm run package` (.ci/run does)")
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        assert {
            "extension/package.json",
            "extension/extension.js",
            "extension/language-configuration.json",
        } <= names
        assert any(n.startswith("extension/node_modules/vscode-languageclient/") for n in names)
        assert z.read("extension/syntaxes/shard.tmLanguage.json") == GRAMMAR.read_bytes()
        assert json.loads(z.read("extension/package.json"))["version"] == manifest()["version"]

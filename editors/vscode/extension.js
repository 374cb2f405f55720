// The client half of shardc's editor support: starts `shardc lsp` (the language server, over
// stdio) for .shard files. Highlighting comes from the TextMate grammar the package ships.
'use strict';

const { workspace } = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate() {
  const settings = workspace.getConfiguration('shardc');
  const server = {
    command: settings.get('command', 'shardc'),
    args: ['lsp', '--time-budget', String(settings.get('timeBudget', 10))],
  };
  const options = {
    documentSelector: [
      { scheme: 'file', language: 'shard' },
      { scheme: 'untitled', language: 'shard' },
    ],
  };
  client = new LanguageClient('shardc', 'shardc language server', server, options);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };

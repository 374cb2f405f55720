// The grammar's one home is grammar/shard.tmLanguage.json at the repository's root; the
// extension ships a copy, made here before packaging.
'use strict';

const fs = require('fs');
const path = require('path');

const source = path.join(__dirname, '..', '..', '..', 'grammar', 'shard.tmLanguage.json');
const target = path.join(__dirname, '..', 'syntaxes', 'shard.tmLanguage.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.copyFileSync(source, target);

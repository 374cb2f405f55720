"""`shardc lsp`: a language server for `.shard` files over stdio, built on pygls and
lsprotocol. server.py holds the protocol and the features (`serve`), compiler.py and worker.py
compile each document in a child process within a time budget, framing.py reads frames from
any bytes. Nothing is imported here: the worker process starts without pygls.
"""

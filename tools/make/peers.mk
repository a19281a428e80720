# peers.mk — what runs beside `make test`, never inside it: the peer comparisons (PyPI), the speed and audit runs
# beside llama.cpp and transformers, and the tables of docs/verification.md.
peer: all
	@tools/peer/run.sh $(BUILD) $(PYTHON)

# The peer benchmark: the reference and the engine beside llama.cpp and transformers on the same checkpoints,
# with the machine's read bandwidth measured in the same run. Everything it installs, builds and writes stays
# under $(BUILD)/peers. BENCH_PEERS_ARGS passes options to tools/peer/bench_peers.py (--help).
BENCH_PEERS_ARGS ?=
bench-peers: all $(BUILD)/readbw
	@tools/peer/bench_peers.sh $(BUILD) $(PYTHON) $(BENCH_PEERS_ARGS)

# `specula audit` of llama-server (our draft model, MTP) over loopback and of transformers, on what bench-peers
# prepared (docs/audit.md). Long.
AUDIT_PEERS_ARGS ?=
audit-peers: all
	@tools/audit/audit_peers.sh $(BUILD) $(AUDIT_PEERS_ARGS)

# The tables of docs/verification.md that `specula verify` prints: its plan (checked by tests/parts/verify-docs.sh)
# and its measured runs, dated, with the machine and the times (tools/verify-docs.sh).
verify-docs: $(BUILD)/specula
	@tools/verify-docs.sh $(BUILD) docs/verification.md

# Bugs planted in copies of the source (tests/mutants/verify.plants) that the default `specula verify` must catch;
# the table goes into docs/verification.md.
PLANT_JOBS ?= 1
verify-plants: $(BUILD)/specula
	@tools/verify-plants.sh -j $(PLANT_JOBS) $(BUILD) docs/verification.md

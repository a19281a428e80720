"""The flags `specula audit --engine-cmd` passes to every adapter (cli/audit_exec.c).

An adapter prints N lines of L token ids for one arm; these are the
arguments that say which arm, how many samples, and the sampling settings
they must be drawn with. Each adapter adds its own (a URL, a model folder).
"""


def add_contract_args(ap):
    ap.add_argument("--arm", choices=["on", "off", "control"], required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--length", type=int, required=True)
    ap.add_argument("--temperature", type=float, required=True)
    ap.add_argument("--top-k", type=int, default=0)
    ap.add_argument("--top-p", type=float, default=1.0)
    ap.add_argument("--min-p", type=float, default=0.0)
    ap.add_argument("--seed", type=int, required=True, help="sample i is drawn with seed SEED + i")
    ap.add_argument("--prompt-ids", required=True, help="the prompt as comma-separated token ids")

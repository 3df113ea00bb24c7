# shellcheck shell=bash
# What a benchmark script needs, under the name bench scripts have sourced: the shell library in
# scripts/lib (processes.sh, measuring.sh, servers.sh: logging, the processes a script starts and
# their stopping, installing missing tools, templates, CPU readings, medians and rounds, the
# upstream nginx, certificates), with its cleanup made the script's EXIT trap. `bench_name`, when
# set, is the name errors give (the script's file name otherwise). The script sets `work` to its
# temporary directory; the processes it starts with `start` are stopped on its exit.
# shellcheck source=scripts/lib/measuring.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/measuring.sh"
# shellcheck source=scripts/lib/servers.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../scripts/lib/servers.sh"
if [[ -n ${bench_name:-} ]]; then script_name=$bench_name; fi
cleanup_on_exit

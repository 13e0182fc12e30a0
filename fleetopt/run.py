"""`fleetopt run`: drive a campaign through ansible-runner, for CI and scripted use.

Secrets come from the environment: FLEETOPT_API_KEY (the server's API key) and
FLEETOPT_SECRET_<NAME> (environment variable <NAME> of the server, e.g. a hub token).
They never reach the artifacts, the results or the logs.

--recommend measures, after the matrix and its report, the stack the report proposed (optimize.yml's
stack stage, -e recommend=true); --verify results/<id>/recommended.yml measures an earlier
recommendation against the baseline in a new campaign (-e recommended=...), without a matrix.

Exit codes:
  0  the campaign ran (every cell has a result, whatever its verdict) and the gate passed
  1  campaign error: the playbook failed, a host was unreachable, or no cell was written
  2  bad usage (argparse)
  3  regression gate: a cell regressed beyond the threshold against the reference campaign
  4  gate incomplete: the gate could not compare every row that was `ok` in the reference (a cell
     that was ok is not ok now or is missing, a concurrency level is missing or failed, a
     reference host is not in this campaign, or the reference holds no ok row); each one is
     printed. Hosts are matched by inventory name; --gate-host-map OLD=NEW matches a renamed one.
     When a compared row also regressed, the exit code is 3 and both kinds are printed.
  5  gate inconclusive (only with --fail-on-inconclusive): every reference row was compared and
     none regressed, but at least one comparison could neither show a regression nor rule out
     one beyond the threshold (too few trials or too much noise); each one is printed. Without
     the option these are printed and the gate passes.
  130, 143  interrupted by SIGINT or SIGTERM; servers were stopped and finished cells kept
"""
import datetime
import json
import os
import pathlib
import shutil
import signal
import sys
import tempfile

from fleetopt.analysis import gate
from fleetopt.analysis.hosts import troubled_hosts
from fleetopt.paths import ROOT

# Runs of optimize.yml for one `fleetopt run --recommend` while its greedy search goes on (each measures up to
# four steps); the search tries each candidate once, so this bounds catalogs of 4 * 8 candidates.
MAX_SEARCH_RUNS = 8
EXIT_OK, EXIT_CAMPAIGN_ERROR, EXIT_REGRESSION, EXIT_GATE_INCOMPLETE, EXIT_GATE_INCONCLUSIVE = 0, 1, 3, 4, 5
# Secrets read from fleetopt's environment. ansible-runner records the environment it passes
# to ansible-playbook in its artifacts, so these leave the environment and travel as extra
# variables in a private directory that is deleted after the run.
API_KEY_ENV = "FLEETOPT_API_KEY"
SECRET_ENV_PREFIX = "FLEETOPT_SECRET_"


def take_secrets_from_environment():
    secrets = {}
    api_key = os.environ.pop(API_KEY_ENV, None)
    if api_key:
        secrets["campaign_api_key"] = api_key
    secret_env = {name[len(SECRET_ENV_PREFIX):]: os.environ.pop(name)
                  for name in list(os.environ) if name.startswith(SECRET_ENV_PREFIX)}
    if secret_env:
        secrets["campaign_secret_env"] = secret_env
    return secrets


class Interrupt:
    """Turns SIGINT/SIGTERM into a cancellation that ansible-runner polls for."""

    def __init__(self):
        self.signum = None
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, self.handle)

    def handle(self, signum, _frame):
        if self.signum is None:
            print("\nfleetopt: %s received; stopping the campaign and its servers"
                  % signal.Signals(signum).name, file=sys.stderr, flush=True)
        self.signum = signum

    def cancelled(self):
        return self.signum is not None

    @property
    def exit_code(self):
        return 128 + self.signum


def parse_extra_vars(pairs):
    extra = {}
    for pair in pairs or []:
        if pair.lstrip().startswith("{"):
            extra.update(json.loads(pair))
            continue
        if "=" not in pair:
            raise SystemExit("fleetopt run: -e wants KEY=VALUE or a JSON object, got %r" % pair)
        key, value = pair.split("=", 1)
        extra[key] = value
    return extra


def campaign_vars(args):
    extra = parse_extra_vars(args.extra_vars)
    extra["campaign_id"] = args.campaign_id
    if args.tier is not None:
        extra["tier"] = args.tier
    if args.only:
        extra["only"] = args.only
    if args.aa is not None:
        extra["aa"] = args.aa
    if args.fresh:
        extra["fresh"] = True
    if getattr(args, "recommend", False):
        extra["recommend"] = True
    if getattr(args, "verify", None):
        if extra.get("recommend"):
            raise SystemExit("fleetopt run: give --recommend (measure this campaign's proposed stack) or --verify "
                             "(verify an earlier recommendation), not both")
        earlier = pathlib.Path(args.verify).resolve()
        if not earlier.is_file():
            raise SystemExit("fleetopt run: no such recommendation %s (give results/<id>/recommended.yml)" % args.verify)
        extra["recommended"] = str(earlier)
    if getattr(args, "slo", None):
        from fleetopt.report.write import parse_slo  # the report's reader: one spelling of --slo
        try:
            extra["campaign_slo"] = parse_slo(args.slo)
        except ValueError as exc:
            raise SystemExit("fleetopt run: %s" % exc)
    if args.results:
        extra["campaign_results_dir"] = str(pathlib.Path(args.results).resolve())
    return extra


def run_playbook(playbook, args, extravars, ident, interrupt=None):
    # ansible-runner starts ansible-playbook from PATH: use the one installed beside fleetopt.
    os.environ["PATH"] = "%s:%s" % (pathlib.Path(sys.executable).parent, os.environ.get("PATH", ""))
    private = tempfile.mkdtemp(prefix="fleetopt-runner-")  # mode 0700; holds the extra vars
    try:
        return _run(private, playbook, args, extravars, ident, interrupt)
    finally:
        if interrupt is not None and interrupt.cancelled():
            kill_detached_workers(private)
        shutil.rmtree(private, ignore_errors=True)


def kill_detached_workers(private):
    """ansible-runner ends a cancelled run by killing ansible-playbook's process group, but Ansible's
    workers run in sessions of their own (setsid) and survive it, carrying on with their task: a
    worker still following a server's start-up calls the module again after fleetopt stopped the
    server, and the module launches it anew. They are known by the private folder in their
    command line (the extra-vars file), which is unique to this run."""
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % name, "rb") as handle:
                argv = handle.read().decode("utf-8", "replace").split("\0")
        except OSError:
            continue
        if any(private in arg for arg in argv):
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass


def _run(private, playbook, args, extravars, ident, interrupt):
    # Imported here: the report and the CLI's help need no ansible-runner, which a GPU host that is its own
    # controller may lack.
    import ansible_runner

    return ansible_runner.run(
        private_data_dir=private,
        project_dir=str(ROOT),
        playbook=str(ROOT / playbook),
        inventory=str(pathlib.Path(args.inventory).resolve()),
        extravars=extravars,
        ident=ident,
        artifact_dir=str(pathlib.Path(args.artifacts).resolve()),
        envvars={"ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1"},
        cancel_callback=interrupt.cancelled if interrupt else None,
        quiet=args.quiet,
    )


def searching(campaign_dir):
    """Whether the campaign's recommendation says its greedy search has a next step to measure."""
    import yaml

    try:
        recommendation = yaml.safe_load((campaign_dir / "recommended.yml").read_text())
    except (OSError, yaml.YAMLError):
        return False
    return isinstance(recommendation, dict) and recommendation.get("outcome") == "searching"


def results_dir(args, extravars):
    return pathlib.Path(extravars.get("campaign_results_dir") or ROOT / "results") / args.campaign_id


def hosts_in_trouble(runner, campaign_dir):
    """Hosts that did not finish their share: from their records, and Ansible's own count."""
    troubled = {host: (status, reason) for host, status, reason in troubled_hosts(campaign_dir)}
    for host in (runner.stats or {}).get("dark") or {}:
        troubled.setdefault(host, ("unreachable", "no answer"))
    return troubled


def check_gate(args, campaign_dir):
    summary_path = campaign_dir / "summary.json"
    if not summary_path.exists():
        print("fleetopt run: no summary.json to gate", file=sys.stderr)
        return EXIT_CAMPAIGN_ERROR
    host_map = gate.parse_host_map(getattr(args, "gate_host_map", None))
    result = gate.evaluate(json.loads(summary_path.read_text()), gate.load_summary(args.gate_reference),
                           args.gate_threshold, host_map=host_map)
    outcome = gate.verdict(result, getattr(args, "fail_on_inconclusive", False))
    lines = gate.describe(result, args.gate_threshold, args.gate_reference)
    for line in lines[:-1]:
        print("fleetopt gate: %s" % line, file=sys.stderr)
    if outcome == "regression":
        print("fleetopt gate: %d regression(s) beyond %.1f %% against %s; %s"
              % (len(result["regressions"]), args.gate_threshold, args.gate_reference, lines[-1]), file=sys.stderr)
        return EXIT_REGRESSION
    if outcome == "incomplete":
        print("fleetopt gate: incomplete: %s against %s; the gate needs every row that was ok there"
              % (lines[-1], args.gate_reference), file=sys.stderr)
        return EXIT_GATE_INCOMPLETE
    if outcome == "inconclusive":
        print("fleetopt gate: %d inconclusive comparison(s) against %s (--fail-on-inconclusive); %s"
              % (len(result["inconclusive"]), args.gate_reference, lines[-1]), file=sys.stderr)
        return EXIT_GATE_INCONCLUSIVE
    print("fleetopt gate: no regression beyond %.1f %% against %s; %s"
          % (args.gate_threshold, args.gate_reference, lines[-1]))
    return EXIT_OK


def main(args):
    args.campaign_id = args.campaign_id or datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    if args.tier is None and not args.only and not getattr(args, "verify", None):
        raise SystemExit("fleetopt run: give --tier N, --only id1,id2 or --verify results/<id>/recommended.yml")
    if args.gate_reference:
        gate.load_summary(args.gate_reference)  # a missing reference is an error before anything runs
        gate.parse_host_map(args.gate_host_map)  # so is a malformed host map
    extravars = campaign_vars(args)
    extravars.update(take_secrets_from_environment())
    interrupt = Interrupt()
    runner = run_playbook("optimize.yml", args, extravars, args.campaign_id, interrupt)
    campaign_dir = results_dir(args, extravars)
    # optimize.yml measures a few steps of a greedy search per run; the campaign is resumed (finished
    # cells kept) until the recommendation stops searching.
    for again in range(1, MAX_SEARCH_RUNS):
        if interrupt.cancelled() or runner.rc != 0 or not extravars.get("recommend") or not searching(campaign_dir):
            break
        print("fleetopt run: the greedy search goes on; resuming campaign %s (run %d)" % (args.campaign_id, again + 1))
        extravars.pop("fresh", None)
        runner = run_playbook("optimize.yml", args, extravars, "%s-search%d" % (args.campaign_id, again), interrupt)
    print("fleetopt run: artifacts in %s" % (pathlib.Path(args.artifacts) / args.campaign_id))

    if interrupt.cancelled():
        run_playbook("playbooks/stop_servers.yml", args, extravars, args.campaign_id + "-stop")
        cells = list(campaign_dir.glob("cells/*/*.json"))
        print("fleetopt run: interrupted; servers stopped; %d finished cell(s) kept in %s"
              % (len(cells), campaign_dir), file=sys.stderr)
        return interrupt.exit_code
    troubled = hosts_in_trouble(runner, campaign_dir)
    if troubled:
        dark = sorted(h for h, (status, _) in troubled.items() if status == "unreachable")
        if dark:
            print("fleetopt run: unreachable host(s): %s" % ", ".join(dark), file=sys.stderr)
        for host, (status, reason) in sorted(troubled.items()):
            print("fleetopt run: %s is %s: %s" % (host, status, reason), file=sys.stderr)
        print("fleetopt run: the report is written; the other hosts' results are in %s" % campaign_dir,
              file=sys.stderr)
        return EXIT_CAMPAIGN_ERROR
    if runner.rc != 0 or not list(campaign_dir.glob("cells/*/*.json")):
        print("fleetopt run: the campaign failed (%s, rc=%s); see the output above"
              % (runner.status, runner.rc), file=sys.stderr)
        return EXIT_CAMPAIGN_ERROR
    if args.gate_reference:
        return check_gate(args, campaign_dir)
    return EXIT_OK

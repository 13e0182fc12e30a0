"""fleetopt's controller side: campaign reports, statistics, log post-mortems, the CLI.

The Ansible modules under plugins/ run on target hosts with the standard library only;
this package runs on the controller, inside the project's virtual environment.
"""

"""The repository a pull-mode lab host pulls from, made and changed on the controller as a fleet's would be.

  fleet_repo.py init PROJECT DIR VARS [HOST...]
                                        the collection's files as the working tree has them (tracked and untracked,
                                        not ignored), plus inventories/pull-lab/hosts.yml built from VARS (YAML: the
                                        fleet's variables) for the hosts (the first in group canary; mol-pull-1 and
                                        mol-pull-2 when none is named: molecule/pull); one commit,
                                        DIR/fleet.git (bare, what git daemon serves) with pull/canary and pull/stable
                                        at it; DIR/work a clone to change
  fleet_repo.py change DIR KEY=VALUE    sets a variable of every host (a YAML value) in the inventory, commits and
                                        pushes to pull/canary
Prints the commit made, nothing else.
"""

import os
import shutil
import subprocess
import sys

import yaml

INVENTORY = os.path.join("inventories", "pull-lab", "hosts.yml")
MOLECULE_HOSTS = ("mol-pull-1", "mol-pull-2")
IDENTITY = {"GIT_AUTHOR_NAME": "pull lab", "GIT_AUTHOR_EMAIL": "lab@example.invalid",
            "GIT_COMMITTER_NAME": "pull lab", "GIT_COMMITTER_EMAIL": "lab@example.invalid"}


def git(*argv, cwd=None):
    result = subprocess.run(["git"] + list(argv), cwd=cwd, capture_output=True, text=True, check=True,
                            env=dict(os.environ, **IDENTITY))
    return result.stdout.strip()


def inventory(fleet_vars, hosts):
    return {"all": {"hosts": dict.fromkeys(hosts), "vars": fleet_vars, "children": {"canary": {"hosts": {hosts[0]: None}}}}}


def write_inventory(work, document):
    path = os.path.join(work, INVENTORY)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("---\n# the lab's pull-mode fleet (molecule/pull): its hosts' variables, as they pull them\n")
        yaml.safe_dump(document, handle, sort_keys=False)


def commit(work, message):
    git("add", "--all", cwd=work)
    git("commit", "--quiet", "-m", message, cwd=work)
    return git("rev-parse", "HEAD", cwd=work)


def init(project, directory, vars_file, hosts=MOLECULE_HOSTS):
    work, bare = os.path.join(directory, "work"), os.path.join(directory, "fleet.git")
    for path in (work, bare):
        shutil.rmtree(path, ignore_errors=True)
    os.makedirs(work)
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=project).split("\0")
    for relative in filter(None, listed):
        source = os.path.join(project, relative)
        if os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.dirname(os.path.join(work, relative)) or work, exist_ok=True)
            shutil.copy2(source, os.path.join(work, relative))
    with open(vars_file, encoding="utf-8") as handle:
        write_inventory(work, inventory(yaml.safe_load(handle), list(hosts)))
    git("init", "--quiet", "--initial-branch=pull/canary", cwd=work)
    first = commit(work, "the fleet as the lab's controller converged it")
    git("init", "--quiet", "--bare", bare)
    git("push", "--quiet", bare, "%s:refs/heads/pull/canary" % first, "%s:refs/heads/pull/stable" % first, cwd=work)
    git("remote", "add", "origin", bare, cwd=work)
    return first


def change(directory, assignment):
    work = os.path.join(directory, "work")
    key, value = assignment.split("=", 1)
    path = os.path.join(work, INVENTORY)
    with open(path, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    document["all"]["vars"][key] = yaml.safe_load(value)
    write_inventory(work, document)
    made = commit(work, "%s: %s" % (key, value))
    git("push", "--quiet", "origin", "HEAD:refs/heads/pull/canary", cwd=work)
    return made


def main(argv):
    if argv[:1] == ["init"] and len(argv) >= 4:
        print(init(*argv[1:4], hosts=argv[4:] or MOLECULE_HOSTS))
    elif argv[:1] == ["change"] and len(argv) == 3:
        print(change(*argv[1:]))
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

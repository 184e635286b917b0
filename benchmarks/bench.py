"""The project's benchmarks, one module each (NAME_bench.py: its arguments, measurement and report); each
writes docs/benchmarks/<report>.json and .md. Run through benchmarks/run, which sets up the environment.
"""

import argparse
import importlib

# benchmark -> its module
BENCHMARKS = {
    "isolation": "isolation_bench",
    "build": "build_bench",
    "converge": "converge_bench",
    "slo": "slo_bench",
    "concurrency": "concurrency_bench",
    "cores": "cores_bench",
    "rollout": "rollout_bench",
    "nohz": "nohz_bench",
    "engines": "engines_bench",
}


def parser():
    modules = {name: importlib.import_module(module) for name, module in BENCHMARKS.items()}
    top = argparse.ArgumentParser(description=__doc__ + "\n" + "\n".join(
        "  %-12s %s" % (name, module.__doc__.splitlines()[0]) for name, module in modules.items()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = top.add_subparsers(dest="benchmark", required=True)
    for name, module in modules.items():
        one = sub.add_parser(name, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
        module.add_arguments(one)
        one.set_defaults(func=module.main)
    return top


def main():
    args = parser().parse_args()
    args.func(args)


if __name__ == "__main__":
    main()

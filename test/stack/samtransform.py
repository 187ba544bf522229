"""Transforms template.yaml as `sam package` and CloudFormation's
AWS::Serverless-2016-10-31 transform do together: each function's CodeUri
becomes the S3 object its package was uploaded to, then aws-sam-translator
expands the serverless resources with the stack's parameter values. Prints
the CloudFormation template as JSON on stdout.

usage: python3 samtransform.py TEMPLATE [--code LogicalId=s3://bucket/key ...]
                               [--param Name=Value ...]

The region comes from AWS_DEFAULT_REGION, as for CloudFormation's own
transform. Run by the whole-stack test (stack_test.go).
"""

import json
import sys

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse


class NoManagedPolicies:
    """The managed policy name -> ARN map the translator would read from
    IAM. Sluice's template names no managed policy (SAM adds
    AWSLambdaBasicExecutionRole by ARN), so none is needed; a policy named
    later would fail the transform, which the test wants to hear about."""

    def load(self):
        return {}


def pairs(args, flag):
    out = {}
    for i, a in enumerate(args):
        if a == flag:
            k, sep, v = args[i + 1].partition("=")
            if not sep:
                sys.exit("%s %s: want Name=Value" % (flag, args[i + 1]))
            out[k] = v
    return out


def main(argv):
    if len(argv) < 2 or argv[1].startswith("-"):
        sys.exit(__doc__)
    code = pairs(argv[2:], "--code")
    params = pairs(argv[2:], "--param")
    with open(argv[1]) as f:
        tpl = yaml_parse(f.read())
    for name, res in tpl.get("Resources", {}).items():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        if name not in code:
            sys.exit("no --code for function %s" % name)
        uri = code.pop(name)
        if not uri.startswith("s3://"):
            sys.exit("--code %s=%s: want s3://bucket/key" % (name, uri))
        res.setdefault("Properties", {})["CodeUri"] = uri
    if code:
        sys.exit("--code for functions the template does not have: %s" % ", ".join(sorted(code)))
    out = transform(tpl, params, NoManagedPolicies())
    json.dump(out, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv)

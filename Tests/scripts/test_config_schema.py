"""The editors' JSON Schemas (`perch schema config|bot`, kept in schemas/): they are what the
build prints, the shipped files and examples validate against them, and every case of the broken
configuration corpus whose finding a schema can see (an unknown key, a missing one, a value of
the wrong type or not one of its choices) is refused by them. Run by `make test`."""
import glob
import json
import os
import re
import subprocess
import unittest

import jsonschema
import yaml

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


class YAML12Loader(yaml.SafeLoader):
    """YAML as Perch and yaml-language-server read it (1.2): `on`, `off`, `yes`, `no` are strings."""


YAML12Loader.yaml_implicit_resolvers = {
    key: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:bool"]
    for key, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.copy().items()
}
YAML12Loader.add_implicit_resolver(
    "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF"))


def load(path):
    with open(path) as f:
        return yaml.load(f, Loader=YAML12Loader)


def perch():
    """The newest perch built here (make test builds the release one just before)."""
    built = [path for path in (os.path.join(ROOT, ".build", build, "perch") for build in ("release", "debug"))
             if os.access(path, os.X_OK)]
    if not built:
        raise AssertionError("perch is not built: swift build --product perch")
    return max(built, key=os.path.getmtime)


def schema(kind):
    with open(os.path.join(ROOT, "schemas", kind + ".schema.json")) as f:
        return json.load(f)


# A finding a schema can see: the file's shape, not what it names.
STRUCTURAL = re.compile(r"unknown key|missing required key|expected true or false|unknown value|unknown option|"
                        r"unknown trigger|unknown action|expected an? (string|integer|list|mapping|number)")


class ConfigSchemaTests(unittest.TestCase):
    def test_the_stored_schemas_are_what_perch_prints(self):
        for kind in ("config", "bot"):
            printed = subprocess.run([perch(), "schema", kind], capture_output=True, text=True, check=True).stdout
            with open(os.path.join(ROOT, "schemas", kind + ".schema.json")) as f:
                self.assertEqual(f.read().strip(), printed.strip(),
                                 f"schemas/{kind}.schema.json is stale: perch schema {kind} > schemas/{kind}.schema.json")

    def test_the_shipped_files_and_examples_validate(self):
        configs = [os.path.join(ROOT, "config.yaml"), os.path.join(ROOT, "examples/swift-plugin/config.yaml")]
        bots = (glob.glob(os.path.join(ROOT, "bots/*.yaml")) + glob.glob(os.path.join(ROOT, "examples/*/bots/*.yaml")))
        self.assertGreater(len(bots), 5)
        for path in configs:
            jsonschema.validate(load(path), schema("config"))
        for path in bots:
            jsonschema.validate(load(path), schema("bot"))

    def test_the_broken_corpus_is_refused_where_a_schema_can_see_it(self):
        seen = 0
        with open(os.path.join(ROOT, "Fuzz/corpus/findings.tsv")) as f:
            rows = [line.rstrip("\n").split("\t", 3) for line in f if line.strip()]
        for name, kind, here, finding in rows:
            if here != "true" or not STRUCTURAL.search(finding):
                continue
            try:
                document = load(os.path.join(ROOT, "Fuzz/corpus", name))
            except yaml.YAMLError:
                continue
            seen += 1
            validator = jsonschema.Draft7Validator(schema(kind))
            self.assertTrue(list(validator.iter_errors(document)), f"{name} ({finding}) passed the {kind} schema")
        self.assertGreaterEqual(seen, 15)


if __name__ == "__main__":
    unittest.main()

"""``driftwatch config validate | schema | show``: check, describe and show settings files.

Exit status: 0, or 2 when a file is invalid (every problem printed as
``path.to.key (ENV_NAME): message``).
"""

from __future__ import annotations

import argparse
import json

from driftwatch.commands.arguments import add_config_argument, load_settings_or_report
from driftwatch.exits import EXIT_INVALID, EXIT_OK

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
"""The dialect pydantic generates."""



def add_config(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    config = commands.add_parser(
        "config", help="check, describe and show settings", description="Settings files."
    )
    actions = config.add_subparsers(title="actions", metavar="ACTION", required=True)

    validate = actions.add_parser(
        "validate",
        help="check settings files",
        description=(
            "Check each FILE as the agent would load it (DRIFTWATCH_* environment variables "
            "applied). Prints 'FILE: ok', or every problem as 'path.to.key (ENV_NAME): "
            "message'; exits 2 if any file is invalid."
        ),
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="settings file (YAML)")
    validate.add_argument(
        "--no-file-checks", dest="check_files", action="store_false",
        help=(
            "do not require the files the settings name (TLS certificates, keys, CA "
            "bundles) to exist here: for a file meant for another machine"
        ),
    )
    validate.set_defaults(handler=_config_validate)

    schema = actions.add_parser(
        "schema",
        help="print the settings' JSON Schema",
        description=(
            "Print the JSON Schema of the settings file, for editors (e.g. the YAML language "
            "server's '# yaml-language-server: $schema=FILE' comment)."
        ),
    )
    schema.set_defaults(handler=_config_schema)

    show = actions.add_parser(
        "show",
        help="print the effective settings",
        description=(
            "Print the settings the agent would run with (file, environment and defaults "
            "merged) as YAML, secrets masked."
        ),
    )
    add_config_argument(show)
    show.set_defaults(handler=_config_show)


def _config_validate(args: argparse.Namespace) -> int:
    status = EXIT_OK
    for path in args.files:
        if load_settings_or_report(path, check_files=args.check_files) is None:
            status = EXIT_INVALID
        else:
            print(f"{path}: ok")
    return status


def _config_schema(args: argparse.Namespace) -> int:
    from driftwatch.settings import Settings

    schema = {"$schema": JSON_SCHEMA_DIALECT, **Settings.model_json_schema()}
    print(json.dumps(schema, indent=2, ensure_ascii=False))
    return EXIT_OK


def _config_show(args: argparse.Namespace) -> int:
    import yaml  # type: ignore[import-untyped, unused-ignore]

    settings = load_settings_or_report(args.config)
    if settings is None:
        return EXIT_INVALID
    # mode="json" renders each SecretStr as "**********" and paths as strings.
    data = settings.model_dump(mode="json")
    print("# Effective driftwatch settings (file, environment, defaults); secrets masked.")
    print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), end="")
    return EXIT_OK

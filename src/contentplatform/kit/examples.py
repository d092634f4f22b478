"""Examples for the object schemas of an OpenAPI 3.1 document, derived from the schemas.

`add_examples(document, plausible)` gives every object schema in `components.schemas` that has
none an `examples: [value]`, a value valid against the schema (JSON Schema 2020-12, as OpenAPI
3.1 uses it), made by `example()`:

- a schema's own `examples` (a model's `json_schema_extra`, a field's `Field(examples=[...])`)
  or `const` first; `$ref`s are resolved in `components.schemas`; `anyOf`/`oneOf`: the first
  branch that is not null, or null when the field may be null and there is nothing particular
  to show (no example, format, enum or plausible value: an `error` that is null, not "text");
  `allOf`: its parts merged;
- an enum: the plausible value for the field's name when the enum has it, else its default,
  else its first value;
- a string: a fixed value by `format` (uuid, date-time, date, email, uri), else the plausible
  value for the field's name, else its default, else "text"; cut or padded to its length bounds;
- a number: the plausible value, else its default, else 1, held within its bounds;
- an array: the plausible value, else one item (as many as `minItems`);
- an object: each property; for an object that refuses other properties (an operation's input),
  only the properties it requires, those with a default and those with examples of their own
  (or its first property when that leaves none: an update changes something), so that
  optional fields appear together only where someone wrote them to; a map
  (`additionalProperties`): the plausible value, else one entry.

`plausible` maps field names (compared without case and underscores: `seoTitle` is `seo_title`)
to a value; a value that is not of the schema's JSON type is passed over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

REF_PREFIX = "#/components/schemas/"
UUID = "3fa85f64-5717-4562-b3fc-2c963f66afa6"
FORMATS: dict[str, str] = {
    "uuid": UUID,
    "date-time": "2030-01-01T09:00:00Z",
    "date": "2030-01-01",
    "time": "09:00:00Z",
    "email": "ada@example.com",
    "uri": "https://blog.example.com/",
}
TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
    "null": (type(None),),
}


def add_examples(document: dict[str, Any], plausible: Mapping[str, Any]) -> None:
    """Give each object schema of the document's components without an example one."""
    schemas: dict[str, Any] = document.get("components", {}).get("schemas", {})
    # All made before any is added, so that none depends on the order of the schemas.
    made = {
        name: example(schema, schemas, plausible, seen=frozenset({name}))
        for name, schema in schemas.items()
        if _is_object(schema) and "examples" not in schema and "example" not in schema
    }
    for name, value in made.items():
        schemas[name]["examples"] = [value]


def example(
    schema: Mapping[str, Any],
    schemas: Mapping[str, Any],
    plausible: Mapping[str, Any],
    *,
    name: str = "",
    seen: frozenset[str] = frozenset(),
) -> Any:
    """A value valid against `schema`; `name` is the field it is for (see the module)."""
    if schema.get("examples"):
        return schema["examples"][0]
    if "example" in schema:
        return schema["example"]
    if "const" in schema:
        return schema["const"]
    if "$ref" in schema:
        ref = str(schema["$ref"]).removeprefix(REF_PREFIX)
        if ref in seen:  # a model that holds itself: stop here
            return None
        return example(schemas[ref], schemas, plausible, name=name, seen=seen | {ref})
    for key in ("anyOf", "oneOf"):
        if key in schema:
            branches = [b for b in schema[key] if b.get("type") != "null"] or schema[key]
            nullable = len(branches) < len(schema[key])
            if nullable and not _particular(branches[0], schemas, plausible, name):
                return None
            return example(branches[0], schemas, plausible, name=name, seen=seen)
    if "allOf" in schema:
        parts = [example(p, schemas, plausible, name=name, seen=seen) for p in schema["allOf"]]
        if all(isinstance(part, dict) for part in parts):
            return {key: value for part in parts for key, value in part.items()}
        return parts[0]
    kind = _type_of(schema)
    found = _plausible(plausible, name, kind)
    if "enum" in schema:
        return _enum(schema, plausible.get(_key(name)) if name else None)
    if kind == "string":
        return _string(schema, found)
    if kind in ("integer", "number"):
        return _number(schema, found)
    if kind == "boolean":
        return found if found is not None else schema.get("default", True)
    if kind == "array":
        return _array(schema, schemas, plausible, name, seen, found)
    if kind == "object" or "properties" in schema:
        return _object(schema, schemas, plausible, seen, found)
    return None


def _is_object(schema: Mapping[str, Any]) -> bool:
    return schema.get("type") == "object" or "properties" in schema


def _type_of(schema: Mapping[str, Any]) -> str | None:
    kind = schema.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        kind = next((k for k in kind if k != "null"), None)
    return kind if isinstance(kind, str) else None


def _plausible(plausible: Mapping[str, Any], name: str, kind: str | None) -> Any:
    """The plausible value for a field of this name, when it is of the schema's JSON type."""
    value = plausible.get(_key(name)) if name else None
    if value is None or kind not in TYPES:
        return None
    if isinstance(value, bool) and kind != "boolean":
        return None
    return value if isinstance(value, TYPES[kind]) else None


def _key(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _enum(schema: Mapping[str, Any], found: Any) -> Any:
    choices = list(schema["enum"])
    for candidate in (found, schema.get("default")):
        if candidate is not None and candidate in choices:
            return candidate
    return choices[0]


def _string(schema: Mapping[str, Any], found: Any) -> str:
    value = FORMATS.get(str(schema.get("format")))
    if value is None:
        default = schema.get("default")
        value = found if found is not None else default if isinstance(default, str) else "text"
    shortest, longest = schema.get("minLength", 0), schema.get("maxLength")
    if len(value) < shortest:
        value = ((value or "x") * (shortest // max(len(value), 1) + 1))[:shortest]
    return value[:longest] if longest is not None else value


def _number(schema: Mapping[str, Any], found: Any) -> int | float:
    default = schema.get("default")
    value: int | float = (
        found
        if found is not None
        else default
        if isinstance(default, int | float) and not isinstance(default, bool)
        else 1
    )
    step = 1 if schema.get("type") == "integer" else 0.5
    if "minimum" in schema:
        value = max(value, schema["minimum"])
    if "exclusiveMinimum" in schema:
        value = max(value, schema["exclusiveMinimum"] + step)
    if "maximum" in schema:
        value = min(value, schema["maximum"])
    if "exclusiveMaximum" in schema:
        value = min(value, schema["exclusiveMaximum"] - step)
    return int(value) if schema.get("type") == "integer" else value


def _array(
    schema: Mapping[str, Any],
    schemas: Mapping[str, Any],
    plausible: Mapping[str, Any],
    name: str,
    seen: frozenset[str],
    found: Any,
) -> list[Any]:
    if found is not None:
        return list(found)
    if schema.get("maxItems") == 0:
        return []
    item = example(schema.get("items", {}), schemas, plausible, seen=seen)
    if item is None and schema.get("items", {}).get("$ref"):
        return []  # an item that would hold itself
    return [item] * max(1, schema.get("minItems", 1))


def _object(
    schema: Mapping[str, Any],
    schemas: Mapping[str, Any],
    plausible: Mapping[str, Any],
    seen: frozenset[str],
    found: Any,
) -> dict[str, Any]:
    properties: Mapping[str, Any] = schema.get("properties", {})
    if not properties:
        return _map(schema, schemas, plausible, seen, found)
    required = set(schema.get("required", ()))
    closed = schema.get("additionalProperties") is False
    wanted = [
        key
        for key, field in properties.items()
        if key in required or not closed or _has_example(field)
    ]
    if not wanted:  # its first property, not null: an update changes something
        first, field = next(iter(properties.items()))
        branches = [b for b in field.get("anyOf", [field]) if b.get("type") != "null"]
        return {first: example(branches[0], schemas, plausible, name=first, seen=seen)}
    return {
        key: example(properties[key], schemas, plausible, name=key, seen=seen) for key in wanted
    }


def _map(
    schema: Mapping[str, Any],
    schemas: Mapping[str, Any],
    plausible: Mapping[str, Any],
    seen: frozenset[str],
    found: Any,
) -> dict[str, Any]:
    """An object without named properties: the plausible value, else one entry when its
    values have a schema, else none."""
    if found is not None:
        return dict(found)
    values = schema.get("additionalProperties")
    if not isinstance(values, dict) or not values:
        return {}
    names = schema.get("propertyNames")
    key = example(names, schemas, plausible, seen=seen) if names else "key"
    return {str(key): example(values, schemas, plausible, seen=seen)}


def _particular(
    schema: Mapping[str, Any], schemas: Mapping[str, Any], plausible: Mapping[str, Any], name: str
) -> bool:
    """Whether a value of `schema` for field `name` says more than its type: the schema has an
    example, a format or an enum, or the field a plausible value."""
    if "$ref" in schema:
        schema = schemas.get(str(schema["$ref"]).removeprefix(REF_PREFIX), {})
    if schema.get("examples") or {"example", "const", "enum", "format"} & schema.keys():
        return True
    return _plausible(plausible, name, _type_of(schema)) is not None


def _has_example(field: Mapping[str, Any]) -> bool:
    """A property given a default (not null) or examples of its own, in any branch."""
    if field.get("default") is not None or field.get("examples") or "example" in field:
        return True
    return any(_has_example(branch) for branch in field.get("anyOf", ()))

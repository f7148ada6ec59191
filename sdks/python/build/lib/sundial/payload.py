"""Typed handler payloads: a pydantic model (if pydantic is installed), a dataclass, or any
callable taking the params. A payload that does not match raises :class:`PayloadError`."""
from __future__ import annotations

import dataclasses
import typing
from typing import Any, Callable, Dict, Optional

from .errors import PayloadError

__all__ = ["parse_payload"]


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or repr(tp)


def _is_pydantic(tp: Any) -> bool:
    if not isinstance(tp, type):
        return False
    if hasattr(tp, "model_validate") and hasattr(tp, "model_fields"):  # pydantic 2
        return True
    return hasattr(tp, "parse_obj") and hasattr(tp, "__fields__")  # pydantic 1


def _check(value: Any, tp: Any, where: str) -> Any:
    """A light check of one dataclass field against its annotation (plain classes,
    Optional/Union, List, Dict, nested dataclasses)."""
    if tp is Any or tp is object:
        return value
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Union:
        errors = []
        for arg in args:
            try:
                return _check(value, arg, where)
            except PayloadError as exc:
                errors.append(exc.message)
        raise PayloadError(f"{where}: {value!r} is none of {', '.join(_type_name(a) for a in args)}")
    if tp is type(None):
        if value is not None:
            raise PayloadError(f"{where}: expected null, got {type(value).__name__}")
        return None
    if origin in (list, typing.List, tuple, set, frozenset):
        if not isinstance(value, list):
            raise PayloadError(f"{where}: expected a list, got {type(value).__name__}")
        if args and origin is list:
            return [_check(v, args[0], f"{where}[{i}]") for i, v in enumerate(value)]
        return value
    if origin in (dict, typing.Dict):
        if not isinstance(value, dict):
            raise PayloadError(f"{where}: expected an object, got {type(value).__name__}")
        if len(args) == 2:
            return {k: _check(v, args[1], f"{where}.{k}") for k, v in value.items()}
        return value
    if origin is typing.Literal:
        if value not in args:
            raise PayloadError(f"{where}: {value!r} is not one of {list(args)!r}")
        return value
    if dataclasses.is_dataclass(tp) and isinstance(tp, type):
        return _dataclass(tp, value, where)
    if isinstance(tp, type):
        if tp is float and isinstance(value, int) and not isinstance(value, bool):
            return float(value)
        if tp is int and isinstance(value, bool):
            raise PayloadError(f"{where}: expected int, got bool")
        if not isinstance(value, tp):
            raise PayloadError(f"{where}: expected {tp.__name__}, got {type(value).__name__}")
    return value


def _dataclass(tp: Any, value: Any, where: str) -> Any:
    if not isinstance(value, dict):
        raise PayloadError(f"{where or 'params'}: expected an object for {tp.__name__}, got {type(value).__name__}")
    try:
        hints = typing.get_type_hints(tp)
    except Exception:  # unresolvable annotations: check names only
        hints = {}
    fields = {f.name: f for f in dataclasses.fields(tp) if f.init}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise PayloadError(f"{where or 'params'}: unknown field(s) {', '.join(unknown)} for {tp.__name__}")
    kwargs: Dict[str, Any] = {}
    for name, f in fields.items():
        path = f"{where}.{name}" if where else name
        if name not in value:
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                raise PayloadError(f"{path}: missing (required by {tp.__name__})")
            continue
        kwargs[name] = _check(value[name], hints.get(name, Any), path)
    return tp(**kwargs)


def parse_payload(tp: Optional[Any], params: Any) -> Any:
    """``params`` as ``tp``; raises :class:`PayloadError` naming what does not match."""
    if tp is None:
        return params
    name = _type_name(tp)
    try:
        if _is_pydantic(tp):
            if hasattr(tp, "model_validate"):
                return tp.model_validate(params)
            return tp.parse_obj(params)
        if dataclasses.is_dataclass(tp) and isinstance(tp, type):
            return _dataclass(tp, params, "")
        if isinstance(tp, type) and tp in (dict, list, str, int, float, bool):
            return _check(params, tp, "params")
        factory: Callable[[Any], Any] = tp
        return factory(params)
    except PayloadError as exc:
        raise PayloadError(f"the params do not match {name}: {exc.message}") from None
    except Exception as exc:  # pydantic's ValidationError, a factory's own error
        text = str(exc).strip().replace("\n", "; ")
        raise PayloadError(f"the params do not match {name}: {text}") from None

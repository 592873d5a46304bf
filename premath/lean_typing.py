"""typing's names for the modules on a hot command's import path, without importing typing.

`import typing` costs a hot command about 5 ms of its start-up (it imports `re`, which imports
`enum`), a fifth of `issue claim-next`'s whole budget. Type checkers read the names below as
typing's own (the `TYPE_CHECKING` branch); at run time they are cheap stand-ins that do what
these modules ask of them: `NamedTuple` makes a real named tuple (fields, defaults, methods and
docstrings, as typing's does), `TypedDict` classes are `dict`, `Protocol` a plain base, and the
other names only sit in annotations and type aliases. Anything that reads annotations at run time
(pydantic) imports typing itself: those modules are not on a hot path.
tests/test_lean_typing.py holds the stand-ins to typing's behaviour and the hot commands to not
importing typing.
"""

from collections import namedtuple

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import IO as IO
    from typing import Any as Any
    from typing import BinaryIO as BinaryIO
    from typing import ClassVar as ClassVar
    from typing import Final as Final
    from typing import Literal as Literal
    from typing import NamedTuple as NamedTuple
    from typing import NoReturn as NoReturn
    from typing import NotRequired as NotRequired
    from typing import Protocol as Protocol
    from typing import TypedDict as TypedDict
    from typing import TypeVar as TypeVar

    def typing_form(annotation: object) -> Any:
        """typing's own object for an annotation of this module (pydantic reads them)."""
else:

    class _Annotation:
        """A typing name that only annotations and type aliases use; subscripted, it keeps its
        parameters for `typing_form`."""

        __slots__ = ("name", "parameters")

        def __init__(self, name, parameters=None):
            self.name = name
            self.parameters = parameters

        def __getitem__(self, parameters):
            return _Annotation(self.name, parameters)

        def __repr__(self):
            return f"premath.lean_typing.{self.name}"

    def typing_form(annotation):
        """typing's own object for an annotation of this module, for the modules that read
        annotations at run time (pydantic's): `Literal["a", "b"]` becomes typing's."""
        if type(annotation) is not _Annotation:
            return annotation
        import typing

        form = getattr(typing, annotation.name)
        return form if annotation.parameters is None else form[annotation.parameters]

    Any = _Annotation("Any")
    BinaryIO = _Annotation("BinaryIO")
    ClassVar = _Annotation("ClassVar")
    Final = _Annotation("Final")
    IO = _Annotation("IO")
    Literal = _Annotation("Literal")
    NoReturn = _Annotation("NoReturn")
    NotRequired = _Annotation("NotRequired")

    def TypeVar(name, *_constraints, **_options):
        return _Annotation(name)

    class Protocol:
        """A protocol's run-time class: a plain base (nothing checks it at run time)."""

        __slots__ = ()

    class _TypedDictMeta(type):
        def __new__(cls, _name, _bases, _namespace, **_options):
            return dict

    TypedDict = type.__new__(_TypedDictMeta, "TypedDict", (), {})

    _NAMED_TUPLE_OWN = frozenset(
        {"__module__", "__qualname__", "__annotations__", "__orig_bases__", "__slots__"}
    )

    class _NamedTupleMeta(type):
        def __new__(cls, name, _bases, namespace):
            fields = tuple(namespace.get("__annotations__", {}))
            defaults = [namespace[field] for field in fields if field in namespace]
            made = namedtuple(name, fields, defaults=defaults, module=namespace["__module__"])
            for key, value in namespace.items():
                if key not in _NAMED_TUPLE_OWN and key not in fields:
                    setattr(made, key, value)
            made.__annotations__ = dict(namespace.get("__annotations__", {}))
            return made

    NamedTuple = type.__new__(_NamedTupleMeta, "NamedTuple", (), {})

"""factory_boy factories and small builders for test data."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        django_get_or_create = ("username",)
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    password = factory.django.Password("pw-for-tests")


def user_with_role(role: str, **fields):
    """A user holding `role` (registry/roles.py): admins are superusers, others join the group."""
    from django.contrib.auth.models import Group

    from registry.roles import ADMIN

    if role == ADMIN:
        return UserFactory(is_superuser=True, is_staff=True, **fields)
    user = UserFactory(**fields)
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def make_skill_md(
    name: str = "demo-skill",
    description: str = "Does a demo thing when asked for a demo.",
    body: str = "# Demo\n\n1. Step one.\n2. Step two.\n",
    **fields,
) -> str:
    """A valid SKILL.md; extra keyword fields are added as simple YAML (lists in flow style)."""
    lines = ["---", f"name: {name}", f"description: {description}"]
    for key, value in fields.items():
        key = key.replace("__", "-")
        if isinstance(value, list | tuple):
            lines.append(f"{key}: [{', '.join(str(v) for v in value)}]")
        else:
            lines.append(f"{key}: {value}")
    lines += ["---", "", body]
    return "\n".join(lines)


def publish(name: str = "demo-skill", *, source: str = "user", files=(), **fields):
    """Publish a skill through the real service and return the PublishResult."""
    from registry.services.skills import skill_version_publish
    from registry.skillformat.bundle import bundle_from_parts

    bundle = bundle_from_parts(make_skill_md(name, **fields).encode(), files)
    return skill_version_publish(bundle=bundle, source=source)

"""On PostgreSQL, an index of the URLs each ``Delivery`` carries, for the look-ups by URL.

A record holds the URLs of one POST (hundreds or thousands of them), so no
ordinary index of the text finds the records that carry a given URL, and a
trigram index neither (nearly every record holds every common trigram). This
one indexes, per record, a 20-bit hash of each of its URLs (GIN over an
``int[]``): a look-up by a whole URL reads the few records whose URLs share
its hash (about one in two thousand) and checks those. See
:func:`indexnow_django.sending.history.with_urls`. Other databases get nothing: their
look-ups read the URL texts, as before.

Creating a function needs the right to create in the schema (the database's
owner has it); without it the migration goes on without the index and says so.
"""

from __future__ import annotations

from typing import Any

from django.db import migrations, transaction

FUNCTION = """
CREATE OR REPLACE FUNCTION indexnow_url_hashes(urls text) RETURNS integer[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$ SELECT coalesce(array_agg(DISTINCT hashtext(url) & 1048575), '{}')
   FROM unnest(string_to_array(urls, E'\\n')) AS url $$
"""


def create_index(apps: Any, schema_editor: Any) -> None:
    connection = schema_editor.connection
    if connection.vendor != "postgresql":
        return
    table = schema_editor.quote_name(apps.get_model("indexnow", "Delivery")._meta.db_table)
    try:
        with transaction.atomic(using=connection.alias):
            schema_editor.execute(FUNCTION)
            schema_editor.execute(
                f"CREATE INDEX IF NOT EXISTS indexnow_delivery_url_hashes ON {table} "
                "USING gin (indexnow_url_hashes(urls))"
            )
    except Exception as exc:
        print(
            f"\n  IndexNow: the history's look-ups by URL get no index ({exc}); they read the "
            "URL texts. Run this migration again as the database's owner to add it."
        )


def drop_index(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        schema_editor.execute("DROP INDEX IF EXISTS indexnow_delivery_url_hashes")
        schema_editor.execute("DROP FUNCTION IF EXISTS indexnow_url_hashes(text)")


class Migration(migrations.Migration):
    dependencies = [("indexnow", "0002_pendingsubmission")]

    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]

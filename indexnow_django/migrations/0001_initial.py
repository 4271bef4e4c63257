from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies = []

    operations = [
        migrations.CreateModel(
            name="Delivery",
            fields=[
                ("id", models.BigAutoField(primary_key=True, serialize=False)),
                ("sent_at", models.DateTimeField(db_index=True, verbose_name="sent at")),
                ("batch_id", models.CharField(db_index=True, max_length=64, verbose_name="batch id")),
                ("attempt", models.PositiveIntegerField(default=1, verbose_name="attempt")),
                ("engine", models.CharField(max_length=255, verbose_name="engine")),
                ("host", models.CharField(max_length=255, verbose_name="host")),
                ("url_count", models.PositiveIntegerField(verbose_name="URLs")),
                (
                    "outcome",
                    models.CharField(
                        choices=[
                            ("accepted", "accepted"),
                            ("retry", "retry"),
                            ("rejected", "rejected"),
                            ("dry_run", "dry run"),
                        ],
                        max_length=16,
                        verbose_name="outcome",
                    ),
                ),
                ("status", models.PositiveSmallIntegerField(blank=True, null=True, verbose_name="status")),
                ("answer", models.TextField(blank=True, verbose_name="answer")),
                ("duration", models.FloatField(default=0.0, verbose_name="duration (s)")),
                ("job_id", models.CharField(blank=True, max_length=128, verbose_name="job id")),
                ("queue", models.CharField(blank=True, max_length=128, verbose_name="queue")),
                ("urls", models.TextField(verbose_name="URLs")),
            ],
            options={
                "verbose_name": "delivery",
                "verbose_name_plural": "deliveries",
                "ordering": ["-sent_at", "-pk"],
                "permissions": [
                    ("send_again", "Can send the URLs of deliveries again"),
                    ("submit_urls", "Can submit URLs to IndexNow"),
                ],
            },
        ),
    ]

from django.contrib import admin

from tests.thirdparty.models import Note

admin.site.register(Note)

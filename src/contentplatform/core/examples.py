"""Plausible values, by field name, for the examples of the API document (kit/examples.py derives
each model's example from its schema and takes a string, number, list or map for a field of one
of these names from here: `seo_title` and `seoTitle` alike). One small world throughout: an
organization `org_a` that writes about gardening, publishing to blog.example.com.

A model whose fields need values that fit together (a job's schedule, a connection's config for
its type) says so itself, with `Field(examples=[...])` or a model example in its schemas.py.
"""

from __future__ import annotations

from typing import Any

TITLE = "Watering in a dry summer"
SLUG = "watering-in-a-dry-summer"
POST_URL = f"https://blog.example.com/{SLUG}"

PLAUSIBLE: dict[str, Any] = {
    # people and organizations
    "idporgid": "org_a",
    "idpuserid": "u1",
    "assigneeid": "u1",
    "authorid": "u1",
    "approvedby": "u1",
    "triggeredbyid": "u1",
    "email": "ada@example.com",
    "environment": "local",
    # documents
    "filename": "handbook.pdf",
    "filetype": "pdf",
    "storagepath": "org_a/uploads/3fa85f64-5717-4562-b3fc-2c963f66afa6/handbook.pdf",
    "contenthash": "9f2c4a1be0d3c5f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1",
    "sizebytes": 48213,
    "contentlength": 48213,
    "chunkcount": 12,
    "language": "en",
    "description": "The gardening handbook our writers draw on.",
    "tags": ["gardening", "watering"],
    "headers": {"Content-Type": "application/pdf"},
    "uploadurl": (
        "http://127.0.0.1:8000/v1/uploads/org_a/uploads/3fa85f64-5717-4562-b3fc-2c963f66afa6/"
        "handbook.pdf?expires=1893488400&length=48213&signature=5d41402abc4b2a76b9719d911017c592"
    ),
    # jobs and what they write
    "jobname": "Weekly gardening notes",
    "topic": TITLE,
    "topics": [TITLE, "Mulch that keeps water in"],
    "keywords": ["drought-tolerant plants", "watering schedule"],
    "contentinstructions": "Friendly and practical; short paragraphs; one tip per section.",
    "cronexpression": "0 9 * * MON",
    "jobtype": "recurring",
    "timezone": "Europe/Berlin",
    "images": ["https://images.example.com/watering-can.jpg"],
    "idempotencykey": "blog-watering-2030-01-01",
    # drafts and posts
    "title": TITLE,
    "slug": SLUG,
    "excerpt": "Water early, deeply and less often: what a dry summer asks of a garden.",
    "content": "<h2>Water early</h2><p>Water early in the morning, twice a week, and deeply.</p>",
    "contenthtml": (
        "<h2>Water early</h2><p>Water early in the morning, twice a week, and deeply.</p>"
    ),
    "html": "<h2>Water early</h2><p>Water early in the morning, twice a week, and deeply.</p>",
    "seotitle": "Watering in a dry summer: a gardener's guide",
    "metadescription": "When and how much to water when the summer is dry.",
    "seometa": {
        "title": "Watering in a dry summer: a gardener's guide",
        "description": "When and how much to water when the summer is dry.",
    },
    "seoscore": 82,
    "avgseoscore": 81.5,
    "publishsuccessrate": 0.95,
    "autopublishthreshold": 80,
    "reason": "The second section repeats the first.",
    "rejectionreason": "The second section repeats the first.",
    "changesummary": "Title and first section edited.",
    "fieldschanged": ["title", "content"],
    "url": POST_URL,
    "canonicalurl": POST_URL,
    "publishedurl": POST_URL,
    "externalurl": POST_URL,
    "externalid": "post-77",
    # publishing
    "name": "Garden blog",
    "type": "webhook",
    "config": {"url": "https://hooks.example.com/posts"},
    "accountlabel": "blog.example.com",
    "credentialshint": "…c0de",
    "capabilities": ["publish", "draft", "update", "unpublish"],
    "warnings": [],
    "signingsecret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "code": "transient",
    "message": "The webhook answered 503: Service Unavailable",
    "retryable": True,
    # a free-text status (a calendar entry's); an enum takes it only when it has it
    "status": "planned",
    "superadmin": False,
    # versions and builds
    "version": "0.2.0",
    "commit": "3f2c1ab",
    "apiversion": "0.2.0",
    "percent": 60,
    "step": "write",
}

"""Texts that must stay text: the viewer's and the lab's XSS payloads, right-to-left script, emoji, CJK."""

HOSTILE = [
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "</script>",
    "javascript:alert(1)",
    "it's \"quoted\"",
    "مرحبا بالعالم",
    "🐱‍👤🎉",
    "注意力机制",
    "<b>bold</b>",
]

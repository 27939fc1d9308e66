"""The people, products and history of the `lumen_studio` fixture, as plain data (fixtures.py builds rows).

Landmarks are the customers whose stories the eval suite asks about; their ids are fixed (`fixed_id`), so
tasks can name them. Times are UTC; the fixture's now is Monday 2026-11-16 10:00.
"""

from __future__ import annotations

# key, product name, description, unit amount (cents), interval (None: one-time), interval count
PRICES = [
    ("drop_in", "Drop-in class", "One class, any style.", 2200, None, None),
    ("class_pack", "10-class pack", "Ten classes, valid six months.", 18000, None, None),
    ("private", "Private session", "One hour with an instructor.", 8000, None, None),
    ("workshop", "Weekend workshop", "A two-hour workshop.", 4500, None, None),
    ("basic", "Basic membership", "Eight classes a month.", 7900, "month", 1),
    ("unlimited", "Unlimited membership", "Every class, every month.", 12900, "month", 1),
    ("annual", "Annual unlimited", "Every class for a year.", 129000, "year", 1),
]

# key, name, email, phone, customer since
CUSTOMERS = [
    ("dana", "Dana Whitfield", "dana.whitfield@gmail.com", "+1 206 555 0147", "2026-02-03 17:20:00"),
    ("marco", "Marco Ruiz", "marco.ruiz@outlook.com", "+1 206 555 0183", "2026-06-01 08:05:00"),
    ("priya", "Priya Natarajan", "priya.n@yahoo.com", "+1 425 555 0126", "2026-08-13 12:40:00"),
    ("ben", "Ben Forde", "ben.forde@gmail.com", "+1 206 555 0152", "2026-03-01 07:45:00"),
    ("omar", "Omar Farouk", "omar.farouk@icloud.com", "+1 206 555 0102", "2026-10-05 16:00:00"),
    ("elena", "Elena Petrova", "elena.petrova@gmail.com", "+1 206 555 0194", "2026-05-18 09:30:00"),
    ("hannah", "Hannah Reed", "hannah.reed@proton.me", "+1 206 555 0171", "2026-11-04 11:15:00"),
    ("grace", "Grace Okoro", "grace.okoro@gmail.com", "+1 253 555 0135", "2026-09-01 06:50:00"),
    ("sofia", "Sofia Marchetti", "sofia.marchetti@yahoo.com", "+1 253 555 0108", "2026-07-01 18:10:00"),
    ("kwame", "Kwame Mensah", "kwame.mensah@gmail.com", "+1 206 555 0129", "2026-11-03 07:00:00"),
    ("aiko", "Aiko Tanaka", "aiko.tanaka@gmail.com", "+1 206 555 0133", "2026-09-20 10:00:00"),
    ("ravi", "Ravi Shah", "ravi.shah@outlook.com", "+1 425 555 0177", "2026-10-27 19:25:00"),
    ("paolo", "Paolo Ricci", "paolo.ricci@gmail.com", "+1 206 555 0116", "2026-11-06 08:30:00"),
    ("chloe", "Chloe Martin", "chloe.martin@icloud.com", "+1 206 555 0164", "2026-10-01 12:00:00"),
    ("tomas", "Tomás Vega", "tomas.vega@gmail.com", "+1 206 555 0189", "2026-08-01 09:00:00"),
]

# Cards: key, customer key, test card number, exp month, exp year, saved at. A customer's first card is its
# default; Sofia's first card expired, so her November renewal failed; she saved a new one since.
CARDS = [
    ("dana_visa", "dana", "4242424242424242", 4, 2029, "2026-02-03 17:21:00"),
    ("marco_mc", "marco", "5555555555554444", 9, 2028, "2026-06-01 08:06:00"),
    ("priya_visa", "priya", "4242424242424242", 1, 2030, "2026-08-13 12:41:00"),
    ("ben_amex", "ben", "378282246310005", 6, 2029, "2026-03-01 07:46:00"),
    ("omar_visa", "omar", "4000056655665556", 3, 2028, "2026-10-05 16:01:00"),
    ("elena_visa", "elena", "4242424242424242", 11, 2027, "2026-05-18 09:31:00"),
    ("hannah_mc", "hannah", "5555555555554444", 2, 2030, "2026-11-04 11:16:00"),
    ("grace_visa", "grace", "4242424242424242", 8, 2029, "2026-09-01 06:51:00"),
    ("sofia_old", "sofia", "4000000000000069", 10, 2026, "2026-07-01 18:11:00"),
    ("sofia_new", "sofia", "5555555555554444", 5, 2030, "2026-11-10 20:02:00"),
    ("kwame_visa", "kwame", "4242424242424242", 7, 2028, "2026-11-03 07:01:00"),
    ("aiko_visa", "aiko", "4000056655665556", 12, 2028, "2026-09-20 10:01:00"),
    ("ravi_visa", "ravi", "4242424242424242", 5, 2029, "2026-10-27 19:26:00"),
    ("paolo_amex", "paolo", "378282246310005", 9, 2030, "2026-11-06 08:31:00"),
    ("chloe_visa", "chloe", "4242424242424242", 10, 2029, "2026-10-01 12:01:00"),
    ("tomas_mc", "tomas", "5555555555554444", 4, 2028, "2026-08-01 09:01:00"),
]

# One-off payments: key, customer key, price key, quantity, paid at, amount refunded (with its time).
PAYMENTS = [
    ("dana_pack", "dana", "class_pack", 1, "2026-11-14 18:02:11", 0, None),
    ("dana_pack_again", "dana", "class_pack", 1, "2026-11-14 18:03:40", 0, None),
    ("dana_drop_in", "dana", "drop_in", 1, "2026-10-02 17:40:00", 0, None),
    ("priya_pack", "priya", "class_pack", 1, "2026-08-13 12:42:00", 0, None),
    ("omar_private", "omar", "private", 1, "2026-10-05 16:02:00", 0, None),
    ("elena_workshop", "elena", "workshop", 1, "2026-10-12 09:00:00", 4500, "2026-10-20 14:12:00"),
    ("elena_pack", "elena", "class_pack", 1, "2026-05-18 09:32:00", 0, None),
    ("hannah_pack", "hannah", "class_pack", 1, "2026-11-04 11:17:00", 0, None),
    ("kwame_drop_in_1", "kwame", "drop_in", 1, "2026-11-03 07:02:00", 0, None),
    ("kwame_drop_in_2", "kwame", "drop_in", 1, "2026-11-10 07:05:00", 0, None),
    ("aiko_drop_in", "aiko", "drop_in", 1, "2026-11-15 08:30:00", 0, None),
    ("aiko_workshop", "aiko", "workshop", 1, "2026-09-20 10:02:00", 0, None),
    ("ravi_pack", "ravi", "class_pack", 1, "2026-10-27 19:27:00", 0, None),
]

# Subscriptions: key, customer key, price key, card key, start; the last period's renewal fails for those
# named in FAILED_RENEWALS. Renewals ran on the start's day of each month (or year).
SUBSCRIPTIONS = [
    ("marco_basic", "marco", "basic", "marco_mc", "2026-06-01 08:07:00"),
    ("ben_unlimited", "ben", "unlimited", "ben_amex", "2026-03-01 07:47:00"),
    ("grace_unlimited", "grace", "unlimited", "grace_visa", "2026-09-01 06:52:00"),
    ("sofia_unlimited", "sofia", "unlimited", "sofia_old", "2026-07-01 18:12:00"),
    ("paolo_annual", "paolo", "annual", "paolo_amex", "2026-11-06 08:32:00"),
    ("chloe_basic", "chloe", "basic", "chloe_visa", "2026-10-01 12:02:00"),
    ("tomas_basic", "tomas", "basic", "tomas_mc", "2026-08-01 09:02:00"),
]
FAILED_RENEWALS = {"sofia_unlimited"}

FIRST_NAMES = [
    "Ada",
    "Noah",
    "Mia",
    "Liam",
    "Zoe",
    "Ethan",
    "Ivy",
    "Lucas",
    "Ruby",
    "Owen",
    "Nina",
    "Caleb",
    "Iris",
    "Felix",
    "Maya",
    "Jonah",
    "Lila",
    "Hugo",
    "Nora",
    "Eli",
    "Tess",
    "Amir",
    "June",
    "Rosa",
    "Theo",
]
LAST_NAMES = [
    "Moreau",
    "Klein",
    "Osei",
    "Lindqvist",
    "Webb",
    "Carvalho",
    "Berg",
    "Reilly",
    "Almeida",
    "Cho",
    "Holm",
    "Zahra",
    "Park",
    "Cohen",
    "Lin",
    "Brennan",
    "Ito",
    "Novak",
    "Sato",
    "Duarte",
    "Kaur",
    "Meyer",
    "Rossi",
    "Nowak",
    "Quinn",
]

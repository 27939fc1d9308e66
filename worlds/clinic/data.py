"""Static material the clinic fixture is built from: the vets, the landmark stories and name lists.

Kept apart from the builder so it reads as logic. Changing anything here changes the built fixture:
bump the world version in world.py so cached fixtures are rebuilt.
"""

PRICES = {"checkup": 65.0, "vaccination": 45.0, "dental": 320.0, "surgery": 480.0}
LATE_CANCELLATION_FEE = 35.0
NO_SHOW_FEE = 50.0

# Slots: every working day from the epoch's Monday for two weeks, one hour each.
SLOT_DAYS = 12  # calendar days from the epoch's date
SLOT_HOURS = (9, 10, 11, 14, 15, 16)
SLOT_MINUTES = 60

# id, name, services, species, weekdays worked
VETS = (
    ("VET-01", "Dr. Amara Osei", "checkup,vaccination,dental", "dog,cat", "Mon,Tue,Wed,Thu,Fri"),
    ("VET-02", "Dr. Lukas Berg", "checkup,dental,surgery", "dog,cat", "Mon,Tue,Thu,Fri"),
    ("VET-03", "Dr. Ines Carvalho", "checkup,vaccination", "dog,cat,rabbit,bird,reptile", "Mon,Wed,Fri"),
    ("VET-04", "Dr. Tom Reilly", "checkup,vaccination", "dog,cat", "Tue,Thu"),
)

# The landmark clients: each carries one or more stories the eval suite asks about.
# id, first name, last name, email, phone, zip, pets: (id, name, species, breed, born_on)
# fmt: off
CLIENTS = (
    ("CLI-0001", "Nora", "Lindqvist", "nora.lindqvist@gmail.com", "(206) 555-0147", "98103",
     (("PET-0001", "Biscuit", "dog", "Beagle", "2022-05-10"),
      ("PET-0002", "Pepper", "cat", "Domestic Shorthair", "2023-09-01"))),
    ("CLI-0002", "Marcus", "Webb", "marcus.webb@outlook.com", "(206) 555-0183", "98117",
     (("PET-0003", "Rocket", "dog", "Border Collie", "2021-02-14"),)),
    ("CLI-0003", "Priya", "Natarajan", "priya.n@fastmail.com", "(425) 555-0126", "98052",
     (("PET-0004", "Miso", "cat", "Siamese", "2024-01-20"),)),
    ("CLI-0004", "Hugo", "Almeida", "hugo.almeida@gmail.com", "(206) 555-0161", "98122",
     (("PET-0005", "Clover", "rabbit", "Holland Lop", "2024-06-02"),)),
    ("CLI-0005", "Sofia", "Marchetti", "sofia.marchetti@yahoo.com", "(253) 555-0108", "98402",
     (("PET-0006", "Luna", "dog", "Golden Retriever", "2026-03-09"),)),
    ("CLI-0006", "Daniel", "Cho", "daniel.cho@icloud.com", "(206) 555-0139", "98109",
     (("PET-0007", "Max", "dog", "Labrador Retriever", "2020-08-30"),)),
    ("CLI-0007", "Grace", "Okoro", "grace.okoro@gmail.com", "(206) 555-0175", "98144",
     (("PET-0008", "Coco", "dog", "Poodle", "2019-11-11"),)),
    ("CLI-0008", "Ben", "Forde", "ben.forde@hotmail.com", "(425) 555-0152", "98033",
     (("PET-0009", "Juno", "dog", "Great Dane", "2021-07-04"),)),
    ("CLI-0009", "Elena", "Petrova", "elena.petrova@proton.me", "(206) 555-0194", "98115",
     (("PET-0010", "Mochi", "cat", "Ragdoll", "2022-03-03"),)),
    ("CLI-0010", "Sam", "Whitaker", "sam.whitaker@gmail.com", "(206) 555-0111", "98107",
     (("PET-0011", "Duke", "dog", "Boxer", "2018-09-19"),)),
    ("CLI-0011", "James", "Miller", "jmiller@gmail.com", "(206) 555-0120", "98105",
     (("PET-0012", "Otis", "cat", "Maine Coon", "2020-12-01"),)),
    ("CLI-0012", "James", "Miller", "james.miller77@yahoo.com", "(253) 555-0190", "98405",
     (("PET-0013", "Bella", "dog", "Corgi", "2023-04-22"),)),
    ("CLI-0013", "Aiko", "Tanaka", "aiko.tanaka@gmail.com", "(206) 555-0133", "98199",
     (("PET-0014", "Kiwi", "bird", "Budgerigar", "2024-08-15"),
      ("PET-0015", "Sushi", "cat", "British Shorthair", "2019-05-05"))),
    ("CLI-0014", "Ravi", "Shah", "ravi.shah@outlook.com", "(425) 555-0177", "98004",
     (("PET-0016", "Tank", "reptile", "Russian Tortoise", "2015-06-01"),)),
    ("CLI-0015", "Lucy", "Brennan", "lucy.brennan@gmail.com", "(206) 555-0168", "98126",
     (("PET-0017", "Hazel", "dog", "Whippet", "2022-10-10"),)),
    ("CLI-0016", "Omar", "Farouk", "omar.farouk@gmail.com", "(206) 555-0102", "98118",
     (("PET-0018", "Simba", "cat", "Bengal", "2021-01-30"),)),
    ("CLI-0017", "Chloe", "Martin", "chloe.martin@gmail.com", "(206) 555-0155", "98103",
     (("PET-0019", "Peanut", "dog", "Dachshund", "2023-02-02"),)),
    ("CLI-0018", "Tomás", "Vega", "tomas.vega@gmail.com", "(206) 555-0189", "98106",
     (("PET-0020", "Nala", "dog", "Mixed breed", "2025-06-15"),)),
    ("CLI-0019", "Fatima", "Zahra", "fatima.zahra@gmail.com", "(206) 555-0144", "98112",
     (("PET-0021", "Zara", "cat", "Persian", "2020-04-04"),)),
    ("CLI-0020", "Ingrid", "Holm", "ingrid.holm@outlook.com", "(206) 555-0171", "98136",
     (("PET-0022", "Bolt", "dog", "German Shepherd", "2012-03-12"),)),
    ("CLI-0021", "Kwame", "Mensah", "kwame.mensah@gmail.com", "(206) 555-0129", "98119",
     (("PET-0023", "Ziggy", "cat", "Tabby", "2022-07-07"),)),
    ("CLI-0022", "Paolo", "Ricci", "paolo.ricci@gmail.com", "(206) 555-0116", "98121",
     (("PET-0024", "Bruno", "dog", "Bulldog", "2020-02-20"),)),
    ("CLI-0023", "Mei", "Lin", "mei.lin@outlook.com", "(425) 555-0141", "98006",
     (("PET-0025", "Tofu", "cat", "Scottish Fold", "2021-09-09"),)),
    ("CLI-0024", "Sara", "Cohen", "sara.cohen@gmail.com", "(206) 555-0186", "98102",
     (("PET-0026", "Pixel", "dog", "Shiba Inu", "2025-11-01"),)),
    ("CLI-0025", "Leo", "Park", "leo.park@icloud.com", "(206) 555-0158", "98108",
     (("PET-0027", "Nori", "cat", "Russian Blue", "2023-12-12"),)),
    ("CLI-0026", "Hannah", "Reed", "hannah.reed@yahoo.com", "(206) 555-0137", "98125",
     (("PET-0028", "Scout", "dog", "Australian Shepherd", "2019-03-03"),)),
)
# fmt: on

# Upcoming landmark appointments, all booked: id, pet, vet, start, service, reason.
UPCOMING = (
    ("APT-2001", "PET-0001", "VET-01", "2026-04-15 10:00:00", "checkup", "Annual checkup"),
    ("APT-2002", "PET-0003", "VET-02", "2026-04-13 14:00:00", "checkup", "Limping on a front leg"),
    ("APT-2003", "PET-0004", "VET-01", "2026-04-13 15:00:00", "vaccination", "Booster"),
    ("APT-2004", "PET-0012", "VET-03", "2026-04-17 09:00:00", "checkup", "Weight check"),
    ("APT-2005", "PET-0013", "VET-04", "2026-04-14 10:00:00", "vaccination", "Rabies booster"),
    ("APT-2006", "PET-0015", "VET-01", "2026-04-16 14:00:00", "dental", "Dental cleaning"),
    ("APT-2007", "PET-0017", "VET-04", "2026-04-14 09:00:00", "checkup", "Skin rash"),
    ("APT-2008", "PET-0018", "VET-01", "2026-04-13 11:00:00", "checkup", "Annual checkup"),
    ("APT-2010", "PET-0021", "VET-02", "2026-04-14 15:00:00", "checkup", "Eye discharge"),
    ("APT-2011", "PET-0022", "VET-03", "2026-04-13 16:00:00", "vaccination", "Annual vaccines"),
    ("APT-2012", "PET-0023", "VET-01", "2026-04-21 10:00:00", "checkup", "Annual checkup"),
    ("APT-2013", "PET-0024", "VET-02", "2026-04-13 10:00:00", "checkup", "Ear infection follow-up"),
    ("APT-2014", "PET-0025", "VET-02", "2026-04-13 16:00:00", "checkup", "Annual checkup"),
    ("APT-2015", "PET-0026", "VET-03", "2026-04-15 09:00:00", "vaccination", "Puppy vaccines, second round"),
)

# Past landmark appointments with the bills they left. Each: appointment fields, then its invoices as
# (id, kind, amount, status, created_at, paid_at or None).
# fmt: off
PAST = (
    # Grace Okoro forgot her appointment: an open no-show fee.
    (("APT-1990", "PET-0008", "VET-01", "2026-04-09 11:00:00", "checkup", "Annual checkup", "no_show",
      None, None, None),
     (("INV-3001", "no_show", 50.0, "open", "2026-04-09 12:00:00", None),)),
    # Ben Forde missed his because Juno was in the emergency hospital: an open no-show fee.
    (("APT-1991", "PET-0009", "VET-02", "2026-04-10 09:00:00", "checkup", "Annual checkup", "no_show",
      None, None, None),
     (("INV-3002", "no_show", 50.0, "open", "2026-04-10 10:00:00", None),)),
    # Elena Petrova cancelled four days ahead but was charged (and paid) the late-cancellation fee.
    (("APT-1992", "PET-0010", "VET-01", "2026-04-08 14:00:00", "checkup", "Vomiting", "cancelled",
      "2026-04-04 10:15:00", "client", "Mochi is better"),
     (("INV-3003", "late_cancellation", 35.0, "paid", "2026-04-04 10:15:00", "2026-04-04 10:16:00"),)),
    # Sam Whitaker was charged twice for one dental cleaning.
    (("APT-1993", "PET-0011", "VET-02", "2026-04-07 10:00:00", "dental", "Dental cleaning", "completed",
      None, None, None),
     (("INV-3004", "visit", 320.0, "paid", "2026-04-07 11:05:00", "2026-04-07 11:06:00"),
      ("INV-3005", "visit", 320.0, "paid", "2026-04-07 11:07:00", "2026-04-07 11:08:00"))),
    # The clinic cancelled Hannah Reed's appointment (vet ill) yet charged her a no-show fee, paid.
    (("APT-1994", "PET-0028", "VET-03", "2026-04-10 15:00:00", "checkup", "Limping", "cancelled",
      "2026-04-10 07:45:00", "clinic", "Vet ill"),
     (("INV-3006", "no_show", 50.0, "paid", "2026-04-10 16:00:00", "2026-04-10 16:30:00"),)),
)
# fmt: on

# Slots the stories need open (the right answer, or a wrong one an agent may pick) or booked (so that
# the right answer is unique). The background never books the first and always books the second.
KEEP_OPEN = frozenset(
    {
        "SLT-0414-1400-04",
        "SLT-0415-1100-01",
        "SLT-0415-1100-03",
        "SLT-0415-1400-01",
        "SLT-0415-1400-03",
        "SLT-0416-0900-04",
        "SLT-0416-1000-02",
        "SLT-0416-1000-04",
        "SLT-0416-1100-02",
        "SLT-0416-1100-04",
        "SLT-0416-1400-02",
        "SLT-0417-1000-03",
        "SLT-0417-1400-01",
    }
)
FORCE_BOOKED = frozenset(
    {
        "SLT-0416-1000-01",
        "SLT-0416-1100-01",
        "SLT-0417-1500-01",
        "SLT-0417-1600-01",
        "SLT-0417-1400-02",
        "SLT-0417-1500-02",
        "SLT-0417-1600-02",
    }
)

# fmt: off
FIRST_NAMES = (
    "Ada", "Amara", "Andre", "Bea", "Caleb", "Carmen", "Dara", "Eli", "Esther", "Felix", "Gwen", "Hana",
    "Isaac", "Jade", "Jonah", "Kai", "Leah", "Mateo", "Mia", "Nadia", "Noah", "Olive", "Owen", "Quinn",
    "Rosa", "Ruth", "Theo", "Uma", "Vera", "Wes", "Yara", "Zane",
)
LAST_NAMES = (
    "Abbott", "Bauer", "Castillo", "Dunn", "Ellis", "Fischer", "Gomez", "Hale", "Iverson", "Jensen",
    "Kowalski", "Lund", "Moreno", "Nakamura", "Ortega", "Pruitt", "Quinlan", "Rhodes", "Sato", "Tran",
    "Ueda", "Vance", "Walsh", "Young",
)
PET_NAMES = (
    "Archie", "Bailey", "Bean", "Blue", "Buddy", "Charlie", "Cleo", "Daisy", "Ellie", "Finn", "Ginger",
    "Gus", "Honey", "Ivy", "Jack", "Leo", "Lola", "Louie", "Maple", "Milo", "Murphy", "Olive", "Oscar",
    "Penny", "Pip", "Remy", "Rosie", "Ruby", "Sadie", "Teddy", "Waffles", "Winnie",
)
# fmt: on
BREEDS = {
    "dog": ("Labrador Retriever", "Beagle", "Poodle", "Terrier mix", "Husky", "Spaniel"),
    "cat": ("Domestic Shorthair", "Tabby", "Siamese", "Maine Coon"),
    "rabbit": ("Netherland Dwarf", "Rex"),
    "bird": ("Cockatiel", "Budgerigar"),
}
SPECIES_WEIGHTS = (("dog", 50), ("cat", 40), ("rabbit", 6), ("bird", 4))
EMAIL_DOMAINS = ("gmail.com", "outlook.com", "yahoo.com", "icloud.com", "proton.me")
ZIPS = ("98101", "98104", "98110", "98116", "98133", "98144", "98155", "98177", "98199")
REASONS = {
    "checkup": ("Annual checkup", "Itchy skin", "Weight check", "Limping", "Ear infection", "Not eating"),
    "vaccination": ("Annual vaccines", "Booster", "Rabies booster"),
    "dental": ("Dental cleaning", "Broken tooth"),
    "surgery": ("Spay", "Neuter", "Lump removal"),
}

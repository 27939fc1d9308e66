"""Static material the fixture builders draw from: names, places, the catalogue and ticket wording.

Kept apart from the builders so they read as logic. Changing anything here changes the built
fixtures: bump the world version in world.py so cached fixtures are rebuilt.
"""

# fmt: off
FIRST_NAMES = (
    "Ada", "Aaliyah", "Abdul", "Adriana", "Aiko", "Alejandro", "Amara", "Amir", "Ana", "Andre", "Anika",
    "Arjun", "Ayesha", "Beatriz", "Benjamin", "Bilal", "Camila", "Carmen", "Chidi", "Chloe", "Connor",
    "Dalia", "Daniela", "Darius", "David", "Deepa", "Diego", "Elena", "Eli", "Emeka", "Emily", "Esther",
    "Farah", "Felix", "Fiona", "Gabriel", "Gwen", "Hana", "Hassan", "Ines", "Isaac", "Isabela", "Jamal",
    "James", "Jasmine", "Javier", "Jin", "Joanna", "Jonah", "Jose", "Julia", "Kai", "Kamala", "Karim",
    "Kateryna", "Keisha", "Kwame", "Laila", "Leah", "Leon", "Lucia", "Luis", "Malik", "Mariam", "Marcus",
    "Mateo", "Mei", "Mia", "Michael", "Min-jun", "Nadia", "Naomi", "Nia", "Nikhil", "Noah", "Nora", "Oliver",
    "Olivia", "Oren", "Paolo", "Pedro", "Quinn", "Rafael", "Rania", "Ravi", "Rebecca", "Rohan", "Rosa",
    "Ruth", "Sakura", "Samuel", "Sana", "Santiago", "Sara", "Sean", "Shira", "Simone", "Siddharth", "Sophie",
    "Tariq", "Tessa", "Thabo", "Theo", "Valentina", "Victor", "Wei", "Xavier", "Yara", "Yusuf", "Zara", "Zoe",
    "Adebayo", "Bianca", "Cormac", "Dmitri", "Eun-ji", "Francesca", "Goran", "Hye-jin", "Ingrid", "Jorge",
    "Kenji", "Lars", "Maribel", "Nkechi", "Omari", "Pilar", "Rashid", "Soren", "Trinh", "Uma", "Vikram",
    "Wanjiru", "Ximena", "Yosef", "Zainab", "Brooke", "Tyler", "Megan", "Kevin",
)
# fmt: on

# fmt: off
LAST_NAMES = (
    "Abara", "Acheampong", "Adeyemi", "Aguilar", "Ahmed", "Alvarez", "Andersen", "Baker", "Banerjee", "Bauer",
    "Becker", "Bennett", "Bianchi", "Brooks", "Campbell", "Castillo", "Chen", "Cho", "Clarke", "Cohen",
    "Costa", "Cruz", "Das", "Delgado", "Diallo", "Dimitrov", "Dominguez", "Eriksen", "Evans", "Farouk",
    "Fernandez", "Fischer", "Flores", "Foster", "Fujita", "Garcia", "Ghosh", "Gonzalez", "Gordon", "Greene",
    "Gupta", "Gutierrez", "Hall", "Hamid", "Harris", "Hernandez", "Hoang", "Hughes", "Ibrahim", "Ito",
    "Jackson", "Jensen", "Johnson", "Joshi", "Kang", "Kaur", "Khan", "Kim", "Kowalski", "Kumar", "Larsen",
    "Lee", "Levy", "Lopez", "Mahmoud", "Martin", "Martinez", "Mbeki", "Mehta", "Mensah", "Meyer", "Miller",
    "Mitchell", "Moreau", "Morales", "Murphy", "Nakamura", "Navarro", "Ng", "Nguyen", "Novak", "Nwosu",
    "O'Connor", "Ochoa", "Okonkwo", "Olsen", "Ortiz", "Owusu", "Park", "Patel", "Pereira", "Petrov",
    "Phillips", "Quintero", "Ramirez", "Reddy", "Reyes", "Richards", "Rivera", "Robinson", "Rodriguez",
    "Romero", "Rossi", "Russo", "Saito", "Salazar", "Sanchez", "Santos", "Schmidt", "Shah", "Silva", "Singh",
    "Sokolova", "Sorensen", "Suzuki", "Tanaka", "Taylor", "Thomas", "Torres", "Tran", "Turner", "Vargas",
    "Vasquez", "Vu", "Walker", "Wang", "Washington", "Weber", "White", "Williams", "Wilson", "Wong", "Wright",
    "Yamamoto", "Yilmaz", "Young", "Zhang", "Zhou", "Zielinski", "Zulu",
)
# fmt: on

# (domain, weight)
EMAIL_DOMAINS = (
    ("gmail.com", 40),
    ("yahoo.com", 10),
    ("outlook.com", 10),
    ("icloud.com", 10),
    ("hotmail.com", 6),
    ("proton.me", 4),
    ("fastmail.com", 3),
    ("aol.com", 2),
    ("comcast.net", 3),
    ("hey.com", 2),
)

# (city, state, first three digits of its ZIP codes, area code)
# fmt: off
CITIES = (
    ("Portland", "OR", "972", "503"), ("Eugene", "OR", "974", "541"), ("Seattle", "WA", "981", "206"),
    ("Spokane", "WA", "992", "509"), ("Tacoma", "WA", "984", "253"), ("San Francisco", "CA", "941", "415"),
    ("Oakland", "CA", "946", "510"), ("Los Angeles", "CA", "900", "213"), ("San Diego", "CA", "921", "619"),
    ("Sacramento", "CA", "958", "916"), ("Fresno", "CA", "937", "559"), ("Phoenix", "AZ", "850", "602"),
    ("Tucson", "AZ", "857", "520"), ("Las Vegas", "NV", "891", "702"), ("Salt Lake City", "UT", "841", "801"),
    ("Boise", "ID", "837", "208"), ("Denver", "CO", "802", "303"), ("Boulder", "CO", "803", "720"),
    ("Albuquerque", "NM", "871", "505"), ("Austin", "TX", "787", "512"), ("Houston", "TX", "770", "713"),
    ("Dallas", "TX", "752", "214"), ("San Antonio", "TX", "782", "210"),
    ("Oklahoma City", "OK", "731", "405"), ("Kansas City", "MO", "641", "816"),
    ("St. Louis", "MO", "631", "314"), ("Omaha", "NE", "681", "402"), ("Minneapolis", "MN", "554", "612"),
    ("Saint Paul", "MN", "551", "651"), ("Madison", "WI", "537", "608"), ("Milwaukee", "WI", "532", "414"),
    ("Chicago", "IL", "606", "312"), ("Evanston", "IL", "602", "847"), ("Indianapolis", "IN", "462", "317"),
    ("Detroit", "MI", "482", "313"), ("Ann Arbor", "MI", "481", "734"), ("Columbus", "OH", "432", "614"),
    ("Cleveland", "OH", "441", "216"), ("Cincinnati", "OH", "452", "513"), ("Pittsburgh", "PA", "152", "412"),
    ("Philadelphia", "PA", "191", "215"), ("Nashville", "TN", "372", "615"), ("Memphis", "TN", "381", "901"),
    ("Louisville", "KY", "402", "502"), ("Atlanta", "GA", "303", "404"), ("Savannah", "GA", "314", "912"),
    ("Charlotte", "NC", "282", "704"), ("Raleigh", "NC", "276", "919"), ("Durham", "NC", "277", "984"),
    ("Richmond", "VA", "232", "804"), ("Arlington", "VA", "222", "703"), ("Baltimore", "MD", "212", "410"),
    ("Washington", "DC", "200", "202"), ("Miami", "FL", "331", "305"), ("Orlando", "FL", "328", "407"),
    ("Tampa", "FL", "336", "813"), ("New Orleans", "LA", "701", "504"), ("Birmingham", "AL", "352", "205"),
    ("Brooklyn", "NY", "112", "718"), ("New York", "NY", "100", "212"), ("Buffalo", "NY", "142", "716"),
    ("Albany", "NY", "122", "518"), ("Jersey City", "NJ", "073", "201"), ("Newark", "NJ", "071", "973"),
    ("Boston", "MA", "021", "617"), ("Cambridge", "MA", "021", "857"), ("Providence", "RI", "029", "401"),
    ("Hartford", "CT", "061", "860"), ("Burlington", "VT", "054", "802"), ("Portland", "ME", "041", "207"),
    ("Anchorage", "AK", "995", "907"), ("Honolulu", "HI", "968", "808"),
)
# fmt: on

# fmt: off
STREET_NAMES = (
    "Maple", "Oak", "Cedar", "Pine", "Elm", "Willow", "Birch", "Aspen", "Magnolia", "Juniper", "Lincoln",
    "Jefferson", "Washington", "Franklin", "Madison", "Adams", "Grant", "Monroe", "Jackson", "Hayes", "Park",
    "Lake", "River", "Hill", "Ridge", "Valley", "Meadow", "Harbor", "Bay", "Spring", "Main", "Church",
    "Market", "Mill", "Union", "Prospect", "Highland", "Sunset", "Broadway", "Central", "Fairview",
    "Greenwood", "Hawthorne", "Kingsley", "Linden", "Orchard", "Rosewood", "Sycamore", "Walnut", "Chestnut",
)
# fmt: on
STREET_SUFFIXES = ("St", "Ave", "Rd", "Blvd", "Ln", "Dr", "Ct", "Way", "Pl", "Ter")
UNIT_FORMATS = ("Apt {n}", "Unit {n}", "Suite {n}", "#{n}")

CARD_BRANDS = (("Visa", 50), ("Mastercard", 30), ("Amex", 12), ("Discover", 8))

# Sales tax by state; states not listed pay DEFAULT_TAX_RATE.
TAX_RATES = {
    "OR": 0.0,
    "AK": 0.0,
    "CA": 0.0825,
    "NY": 0.08875,
    "TX": 0.0825,
    "WA": 0.101,
    "IL": 0.1025,
    "TN": 0.0955,
    "LA": 0.0945,
    "CO": 0.077,
    "MA": 0.0625,
    "FL": 0.07,
    "PA": 0.06,
    "MI": 0.06,
}
DEFAULT_TAX_RATE = 0.07
FREE_SHIPPING_OVER = 75.0
GROUND_FEE = 6.95
EXPRESS_FEE = 14.95

# (carrier, service, promised transit days, tracking number pattern: '#' a digit, '?' a digit or letter,
#  weight). Services promising three days or fewer are express.
CARRIERS = (
    ("UPS", "Ground", 5, "1Z????????????????", 35),
    ("UPS", "2nd Day Air", 2, "1Z????????????????", 8),
    ("FedEx", "Home Delivery", 4, "############", 25),
    ("FedEx", "Express Saver", 3, "############", 5),
    ("USPS", "Ground Advantage", 5, "9400##################", 22),
    ("USPS", "Priority Mail", 3, "9405##################", 5),
)
WAREHOUSE = "Reno, NV"
TRANSIT_HUBS = (
    "Sacramento, CA",
    "Salt Lake City, UT",
    "Denver, CO",
    "Phoenix, AZ",
    "Dallas, TX",
    "Kansas City, MO",
    "Chicago, IL",
    "Louisville, KY",
    "Memphis, TN",
    "Atlanta, GA",
    "Indianapolis, IN",
    "Columbus, OH",
    "Allentown, PA",
    "Secaucus, NJ",
    "Portland, OR",
    "Seattle, WA",
    "Ontario, CA",
    "Jacksonville, FL",
)
DELIVERY_NOTES = (
    "Delivered, left at front door",
    "Delivered, handed to resident",
    "Delivered to mailroom",
    "Delivered, left at side door",
    "Delivered to parcel locker",
)
DELAY_NOTES = (
    "Delayed: severe weather in the area",
    "Delayed: high package volume",
    "Delayed: missed connection at facility",
    "Delayed: mechanical issue with vehicle",
)

# The catalogue: (code, name, category, price, variants, final_sale). Variants of one family share its
# price, so an exchange never changes what was paid.
_SIZES = ("XS", "S", "M", "L", "XL")
CATALOG = (
    ("SDP", "Stoneware Dinner Plates, Set of 4", "Kitchen", 48.00, ("Sand", "Slate", "Sage"), False),
    ("CIS", "Cast Iron Skillet, 12-inch", "Kitchen", 54.00, ("One size",), False),
    ("POK", "Pour-Over Coffee Kettle", "Kitchen", 64.00, ("Matte Black", "Brushed Steel"), False),
    ("CKN", "Chef's Knife, 8-inch", "Kitchen", 89.00, ("One size",), False),
    ("ESP", "Espresso Machine Pro", "Kitchen", 649.00, ("Stainless",), False),
    ("LAP", "Linen Apron", "Kitchen", 28.00, ("Natural", "Indigo", "Rust"), False),
    ("GSC", "Glass Storage Containers, 10-Piece", "Kitchen", 42.00, ("One size",), False),
    ("DUV", "Washed Linen Duvet Cover, Queen", "Home", 159.00, ("Oat", "Charcoal", "Terracotta"), False),
    ("WTB", "Wool Throw Blanket", "Home", 98.00, ("Heather Grey", "Forest", "Mustard"), False),
    ("CTL", "Ceramic Table Lamp", "Home", 124.00, ("White", "Speckled Blue"), False),
    ("JRG", "Jute Area Rug, 5x8", "Home", 189.00, ("Natural",), False),
    ("SOY", "Soy Wax Candle", "Home", 24.00, ("Cedar & Smoke", "Fig", "Sea Salt"), False),
    (
        "MCS",
        "Merino Crew Sweater",
        "Apparel",
        88.00,
        tuple(f"{c} / {s}" for c in ("Charcoal", "Navy", "Oatmeal") for s in _SIZES[1:]),
        False,
    ),
    (
        "OCT",
        "Organic Cotton Tee",
        "Apparel",
        26.00,
        tuple(f"{c} / {s}" for c in ("White", "Black", "Olive") for s in _SIZES),
        False,
    ),
    ("WCJ", "Waxed Canvas Jacket", "Apparel", 198.00, tuple(f"Tobacco / {s}" for s in _SIZES[1:]), False),
    ("ECH", "Everyday Chino", "Apparel", 68.00, tuple(f"Khaki / {w}x32" for w in (30, 32, 34, 36)), False),
    ("WBS", "Wool Blend Socks, 3-Pack", "Apparel", 22.00, ("S", "M", "L"), True),
    ("TRR", "Trail Runner", "Footwear", 130.00, tuple(f"Size {n}" for n in range(7, 13)), False),
    ("LCB", "Leather Chelsea Boot", "Footwear", 210.00, tuple(f"Size {n}" for n in range(7, 13)), False),
    ("DPK", "Ultralight Daypack 22L", "Outdoor", 79.00, ("Black", "Moss", "Ember"), False),
    ("IWB", "Insulated Water Bottle, 32 oz", "Outdoor", 34.00, ("Glacier", "Charcoal", "Coral"), False),
    ("TNT", "Two-Person Backpacking Tent", "Outdoor", 289.00, ("One size",), False),
    ("DSB", "Down Sleeping Bag, 20F", "Outdoor", 249.00, ("Regular", "Long"), False),
    ("HDL", "Rechargeable Headlamp", "Outdoor", 39.00, ("One size",), False),
    ("NCH", "Noise-Cancelling Headphones", "Electronics", 279.00, ("Black", "Silver"), False),
    ("WEB", "Wireless Earbuds", "Electronics", 129.00, ("Black", "White"), False),
    ("SKS", "Smart Kitchen Scale", "Electronics", 45.00, ("One size",), False),
    ("BSP", "Portable Bluetooth Speaker", "Electronics", 99.00, ("Slate", "Sand"), False),
    ("LBO", "Lavender Body Oil", "Bath & Body", 32.00, ("100 ml",), True),
    ("BTS", "Bamboo Bath Towel Set", "Bath & Body", 64.00, ("White", "Sage", "Stone"), False),
    ("SHB", "Shampoo Bar Duo", "Bath & Body", 18.00, ("One size",), True),
    ("LCW", "Leather Card Wallet", "Accessories", 45.00, ("Tan", "Black"), False),
    ("CTB", "Canvas Tote", "Accessories", 38.00, ("Natural", "Navy"), False),
    ("HMS", "Holiday Mug Set (Clearance)", "Clearance", 12.00, ("One size",), True),
    ("FLS", "Flannel Sheet Set, Queen (Clearance)", "Clearance", 45.00, ("Plaid",), True),
)

# Ticket wording: (subject, first customer message). Placeholders: {first} (the customer's first name),
# {order} (the order id), {item} (a product name).
TICKET_TEXT = {
    "damaged_item": (
        (
            "Item arrived damaged",
            "Hi, order {order} arrived today but the {item} is damaged: the box was "
            "crushed and it's unusable. What can you do? Thanks, {first}",
        ),
        (
            "Broken on arrival",
            "Hello, I just opened my package for {order}. The {item} is broken. "
            "I'd like this sorted please. {first}",
        ),
        (
            "Defective item",
            "The {item} from order {order} doesn't work properly out of the box. "
            "Can I get a replacement? {first}",
        ),
    ),
    "late_delivery": (
        (
            "Order arrived late",
            "My order {order} showed up days after the date you promised. Not great. {first}",
        ),
        (
            "Delivery was very late",
            "Hi, {order} was supposed to arrive much earlier. It's here now but "
            "I needed it for an event. Is there anything you can do? {first}",
        ),
    ),
    "where_is_my_order": (
        (
            "Where is my order?",
            "Hi, I ordered {order} and tracking hasn't moved in days. Where is it? {first}",
        ),
        (
            "Tracking not updating",
            "Tracking for {order} has been stuck. Can you check with the carrier? Thanks, {first}",
        ),
        ("Package not received", "The {item} from {order} still hasn't arrived. Please help. {first}"),
    ),
    "return_request": (
        ("Return request", "Hi, I'd like to return the {item} from order {order}. How do I do that? {first}"),
        (
            "Doesn't fit, want to return",
            "The {item} ({order}) doesn't work for me. Can I send it back for a refund? {first}",
        ),
    ),
    "cancellation": (
        ("Cancel my order", "Please cancel order {order}, I ordered by mistake. {first}"),
        ("Cancellation", "Hi, I no longer need the {item}. Can you cancel {order} before it ships? {first}"),
    ),
    "exchange": (
        (
            "Exchange for a different size",
            "Hi, the {item} from {order} is the wrong size. Can I exchange it for another size? {first}",
        ),
    ),
    "billing": (
        ("Charged twice?", "I see two charges on my card for order {order}. Can you check? {first}"),
        (
            "Question about my receipt",
            "The tax on {order} looks higher than I expected. Can you explain it? {first}",
        ),
    ),
    "product_question": (
        ("Question about the {item}", "Is the {item} machine washable or dishwasher safe? Thanks, {first}"),
        ("Restock?", "Will the {item} be back in stock soon? {first}"),
        ("Sizing question", "How does the {item} run, true to size? {first}"),
    ),
    "account": (
        ("Can't log in", "I can't log into my account, the reset email never arrives. {first}"),
        ("Unsubscribe", "Please take me off the marketing emails. {first}"),
    ),
}

# What the desk answered on tickets it closed before the fixture clock, by category.
CLOSED_REPLY = {
    "damaged_refund": "Sorry about that! I've refunded the damaged {item} to your original payment method.",
    "damaged_reship": "Sorry it arrived damaged. A replacement {item} is on its way at no charge.",
    "late_delivery": "Sorry for the delay. I've added ${amount} of store credit to your account.",
    "lost_refund": "The carrier has confirmed the package is lost. I've refunded the order in full.",
    "lost_reship": "The carrier has confirmed the package is lost, so we've sent a replacement.",
    "where_is_my_order": "Your package has now been delivered. Thanks for your patience!",
    "return_request": "I've emailed you a prepaid return label. Your refund is issued once it arrives.",
    "cancellation": "Your order has been cancelled and the payment released.",
    "exchange": "Your exchange is set up: the new size ships as soon as we receive the original.",
    "billing": "I checked: the second line was an authorisation hold that has now dropped off.",
    "product_question": "Thanks for asking! The care details are on the product page; let us know if we can help.",
    "account": "Done, your account is updated. Let us know if anything else comes up.",
}
FOLLOW_UPS = (
    "Thanks for reaching out! Could you confirm the email address on your account so I can look into this?",
    "Sorry to hear that. Could you send a photo of the item and its packaging?",
    "Happy to help. Which item in the order is this about?",
)
THANKS = ("Thanks!", "Great, thank you.", "Perfect, appreciate it.", "Thank you for the quick help.")

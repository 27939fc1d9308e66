"""Hand-written stories planted in every helpdesk fixture, one policy rule each.

An eval task names a landmark customer and their open ticket; the list in fixtures.py's docstring says
what each one asks and what policy.md expects. Times are relative to the fixture clock and the ids are
fixed, so the stories read the same in small_shop and big_retailer.
"""

from datetime import datetime, timedelta

from .shop import DAY, HOUR, Order, Shop, Text

# key: (first, last, email, date of birth, support PIN, phone, tier, (line1, line2, city, state, zip),
#       days since sign-up)
# fmt: off
PEOPLE = {
    "maya": ("Maya", "Chen", "maya.chen@fastmail.com", "1988-04-17", "4821", "(503) 628-0142", "standard",
        ("2231 SE Belmont St", None, "Portland", "OR", "97214"), 812),
    "daniel": ("Daniel", "Okafor", "dokafor@gmail.com", "1979-11-02", "1190", "(404) 371-7731", "standard",
        ("88 Peachtree Pl NW", "Apt 12", "Atlanta", "GA", "30309"), 1404),
    "priya": ("Priya", "Raman", "priya.raman@outlook.com", "1992-06-29", "7305", "(512) 846-2958", "plus",
        ("4107 Avenue H", None, "Austin", "TX", "78751"), 655),
    "lucas": ("Lucas", "Martins", "lucas.martins@icloud.com", "1985-02-14", "6642", "(303) 419-4417",
        "standard", ("1550 Downing St", "Unit 4", "Denver", "CO", "80218"), 301),
    "hannah": ("Hannah", "Schmidt", "hannah.schmidt@yahoo.com", "1990-09-08", "3057", "(608) 255-8820",
        "standard", ("17 Jenifer St", None, "Madison", "WI", "53703"), 977),
    "aisha": ("Aisha", "Bello", "aisha.bello@gmail.com", "1996-01-23", "9912", "(718) 384-3305", "standard",
        ("219 Grand St", "Apt 5", "Brooklyn", "NY", "11211"), 190),
    "tomas": ("Tomás", "Rivera", "tomas.rivera@hotmail.com", "1983-07-19", "2286", "(210) 732-6149",
        "standard", ("302 W Mistletoe Ave", None, "San Antonio", "TX", "78212"), 1120),
    "grace": ("Grace", "Liu", "grace.liu@gmail.com", "1991-12-05", "5530", "(206) 524-9071", "standard",
        ("5809 24th Ave NW", None, "Seattle", "WA", "98107"), 530),
    "omar": ("Omar", "Haddad", "omar.haddad@proton.me", "1977-03-30", "8164", "(734) 663-2284", "plus",
        ("1203 Granger Ave", None, "Ann Arbor", "MI", "48104"), 1630),
    "sofia": ("Sofia", "Rossi", "sofia.rossi@gmail.com", "1994-05-11", "4409", "(215) 629-5196", "standard",
        ("1014 Christian St", None, "Philadelphia", "PA", "19147"), 420),
    "ethan": ("Ethan", "Brooks", "ethan.brooks@icloud.com", "1989-10-27", "7718", "(312) 787-6683",
        "standard", ("2130 N Halsted St", "Apt 3F", "Chicago", "IL", "60614"), 733),
    "chloe": ("Chloe", "Dubois", "chloe.dubois@gmail.com", "1998-02-02", "1624", "(617) 262-4390", "standard",
        ("41 Gloucester St", "Apt 2", "Boston", "MA", "02115"), 248),
    "robert": ("Robert", "Kim", "robert.kim@comcast.net", "1968-08-14", "3391", "(619) 295-7705", "plus",
        ("3745 Park Blvd", None, "San Diego", "CA", "92103"), 1811),
    "natalie": ("Natalie", "Wright", "natalie.wright@aol.com", "1986-04-04", "6075", "(305) 532-1438",
        "standard", ("1500 Bay Rd", "Apt 810", "Miami", "FL", "33139"), 566),
    "kenji": ("Kenji", "Watanabe", "kenji.w@gmail.com", "1980-06-16", "2840", "(415) 931-9952", "standard",
        ("1888 Pine St", None, "San Francisco", "CA", "94109"), 1290),
    "fatima": ("Fatima", "Al-Sayed", "fatima.alsayed@outlook.com", "1993-11-21", "5107", "(713) 524-3016",
        "standard", ("2406 Taft St", None, "Houston", "TX", "77006"), 350),
    "megan": ("Megan", "O'Brien", "megan.obrien@gmail.com", "1997-07-07", "8842", "(401) 351-2570",
        "standard", ("77 Hope St", None, "Providence", "RI", "02906"), 144),
    "carlos": ("Carlos", "Mendoza", "carlos.mendoza@yahoo.com", "1982-01-12", "4473", "(602) 254-8124",
        "standard", ("1620 N 7th Ave", None, "Phoenix", "AZ", "85007"), 902),
    "ava": ("Ava", "Thompson", "ava.thompson@gmail.com", "2000-03-03", "1358", "(615) 297-6602", "standard",
        ("1911 Belcourt Ave", "Apt 6", "Nashville", "TN", "37212"), 75),
    "minh": ("Minh", "Nguyen", "minh.nguyen@gmail.com", "1988-02-17", "3150", "(510) 652-4472", "standard",
        ("5521 Lawton Ave", None, "Oakland", "CA", "94618"), 1012),
    "lily": ("Lily", "Nguyen", "lily.nguyen@icloud.com", "1990-08-25", "9266", "(510) 652-4471", "standard",
        ("5521 Lawton Ave", None, "Oakland", "CA", "94618"), 866),
    "jordan": ("Jordan", "Taylor", "jordan.taylor@hey.com", "1987-12-18", "3724", "(612) 338-5530",
        "standard", ("2618 Girard Ave S", None, "Minneapolis", "MN", "55408"), 1510),
    "isabel": ("Isabel", "Ferreira", "isabel.ferreira@gmail.com", "1975-05-29", "6290", "(216) 791-8816",
        "standard", ("2900 Fairmount Blvd", None, "Cleveland", "OH", "44118"), 640),
    "samuel": ("Samuel", "Adeyemi", "samuel.adeyemi@outlook.com", "1984-02-26", "4016", "(919) 833-3349",
        "standard", ("610 Oberlin Rd", "Apt 204", "Raleigh", "NC", "27605"), 1095),
    "wei": ("Wei", "Zhang", "wei.zhang@gmail.com", "1979-09-09", "7583", "(847) 864-6097", "standard",
        ("1420 Hinman Ave", None, "Evanston", "IL", "60201"), 1377),
    "maria_h": ("Maria", "Garcia", "maria.garcia@gmail.com", "1972-10-30", "6031", "(713) 861-2214",
        "standard", ("1119 Heights Blvd", None, "Houston", "TX", "77008"), 1702),
    "maria_t": ("Maria", "Garcia", "mgarcia82@yahoo.com", "1982-03-14", "2719", "(813) 254-9183", "standard",
        ("3402 W Bay to Bay Blvd", None, "Tampa", "FL", "33629"), 488),
}
# fmt: on

# Landmark customers, orders and tickets keep fixed numbers in every fixture (the background takes the
# others in time order), so eval tasks can name them; the story calls below pass their order and ticket
# numbers as `pin`.
# fmt: off
CUSTOMER_NUMBERS = {
    "maya": 18, "daniel": 5, "priya": 25, "lucas": 33, "hannah": 14, "aisha": 40, "tomas": 10, "grace": 29,
    "omar": 3, "sofia": 31, "ethan": 22, "chloe": 36, "robert": 1, "natalie": 28, "kenji": 8, "fatima": 32,
    "megan": 42, "carlos": 16, "ava": 44, "minh": 13, "lily": 17, "jordan": 4, "isabel": 26, "samuel": 11,
    "wei": 6, "maria_h": 2, "maria_t": 30,
}
# fmt: on

# Carriers, by their index in data.CARRIERS.
UPS_GROUND, FEDEX_HOME, USPS_GROUND, USPS_PRIORITY = 0, 2, 4, 5


def add_people(shop: Shop) -> dict[str, dict]:
    people = {}
    for key, (first, last, email, dob, pin, phone, tier, address, age) in PEOPLE.items():
        people[key] = shop.add_person(
            first,
            last,
            created=shop.now - age * DAY - 7 * HOUR,
            email=email,
            phone=phone,
            dob=dob,
            pin=pin,
            tier=tier,
            address=address,
            number=CUSTOMER_NUMBERS[key],
        )
    return people


def _delivered_ago(shop: Shop, days: int, transit: int) -> datetime:
    """When to place an order so that, picked up 20 hours later, it arrives `days` days ago."""
    return shop.at(days + 1 + transit, 10)


def add_stories(shop: Shop, p: dict[str, dict]) -> None:
    at, product, order, ticket = shop.at, shop.product, shop.order, shop.ticket
    now = shop.now
    on_time = {"capture_h": 1, "label_h": 6, "ship_h": 20}

    # Stock the stories depend on.
    for code, variant, stock in (
        ("SDP", "Slate", 25),
        ("MCS", "Navy / L", 14),
        ("TRR", "Size 9", 0),
        ("TRR", "Size 8", 9),
        ("TNT", "One size", 6),
        ("DSB", "Regular", 4),
        ("ESP", "Stainless", 3),
        ("DPK", "Black", 12),
        ("IWB", "Glacier", 30),
        ("CTL", "Speckled Blue", 7),
        ("CKN", "One size", 11),
        ("WCJ", "Tobacco / L", 5),
        ("SKS", "One size", 0),
    ):
        product(code, variant)["stock"] = stock

    def text(template: str, o: Order, **fields: object) -> Text:
        return Text(template, order=o.id, **fields)

    # Damage reported within days: refund the plates or reship them.
    o = order(
        p["maya"],
        _delivered_ago(shop, 4, 5),
        [(product("SDP", "Slate"), 1), (product("LAP", "Indigo"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1085,
    )
    ticket(
        p["maya"],
        "damaged_item",
        at(3, 19, 12),
        "Plates arrived cracked",
        text(
            "Hi, my order {order} arrived yesterday. Two of the four Stoneware Dinner Plates (Slate) are cracked "
            "straight through; the box looked fine, so I think they were packed loosely. I'd like replacements "
            "if you have them, otherwise a refund for the plates. The apron is fine. Thanks, Maya",
            o,
        ),
        order=o,
        pin=5014,
    )

    # Change of mind 52 days after delivery, standard tier: outside the window.
    o = order(
        p["daniel"],
        _delivered_ago(shop, 52, 4),
        [(product("WCJ", "Tobacco / L"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        **on_time,
        pin=1051,
    )
    ticket(
        p["daniel"],
        "return_request",
        at(1, 20, 41),
        "Return a jacket",
        text(
            "Hello, I bought the Waxed Canvas Jacket (order {order}) a while back. I've never worn it and "
            "I've changed my mind. Please send me a return label so I can get my money back. Daniel",
            o,
        ),
        order=o,
        channel="web_form",
        pin=5024,
    )

    # Plus member, 41 days after delivery: inside the 60-day window.
    o = order(
        p["priya"],
        _delivered_ago(shop, 41, 5),
        [(product("TRR", "Size 8"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="paypal",
        **on_time,
        pin=1059,
    )
    ticket(
        p["priya"],
        "return_request",
        at(1, 8, 5),
        "Returning my Trail Runners",
        text(
            "Hi there, the Trail Runners from {order} rub my heel on every run, so I'd like to return them. "
            "I'm a Plus member, so I believe I'm still within my return window. Thanks, Priya",
            o,
        ),
        order=o,
        pin=5018,
    )

    # Processing, not shipped: cancel.
    o = order(
        p["lucas"],
        now - 20 * HOUR,
        [(product("NCH", "Black"), 1)],
        carrier=UPS_GROUND,
        pay="card",
        capture_h=0.5,
        label_h=30,
        ship_h=40,
        pin=1098,
    )
    ticket(
        p["lucas"],
        "cancellation",
        now - 1 * HOUR,
        "Cancel order",
        text("Hi, I need to cancel {order}. I found the same headphones at a local store. Lucas", o),
        order=o,
        channel="chat",
        pin=5032,
    )

    # Shipped two days ago: cannot cancel.
    o = order(
        p["hannah"],
        at(3, 11),
        [(product("BTS", "Sage"), 1), (product("WTB", "Forest"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        capture_h=1,
        label_h=8,
        ship_h=22,
        pin=1092,
    )
    ticket(
        p["hannah"],
        "cancellation",
        at(0, 7, 2),
        "Please cancel",
        text(
            "Please cancel {order}. It turns out my sister already bought me towels and a blanket. Hannah", o
        ),
        order=o,
        pin=5028,
    )

    # Pending: change the shipping address.
    o = order(
        p["aisha"],
        now - 2.5 * HOUR,
        [(product("DPK", "Moss"), 1)],
        carrier=USPS_GROUND,
        pay="card",
        capture_h=4,
        label_h=12,
        ship_h=20,
        pin=1100,
    )
    ticket(
        p["aisha"],
        "address_change",
        now - 1.5 * HOUR,
        "New shipping address",
        text(
            "I just moved! Please ship {order} to 48 Prospect Park W, Apt 3B, Brooklyn, NY 11215 instead of "
            "my old address on Grand St. Thanks, Aisha",
            o,
        ),
        order=o,
        channel="web_form",
        pin=5029,
    )

    # Shipped yesterday: too late to change the address.
    o = order(
        p["tomas"],
        at(2, 14),
        [(product("ECH", "Khaki / 32x32"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        capture_h=1,
        label_h=10,
        ship_h=18,
        pin=1096,
    )
    ticket(
        p["tomas"],
        "address_change",
        now - 2 * HOUR,
        "Change delivery address",
        text(
            "Can you send {order} to my office instead? 700 E Commerce St, San Antonio, TX 78205. "
            "Nobody is home during the day. Tomás",
            o,
        ),
        order=o,
        channel="chat",
        pin=5026,
    )

    # Lost in transit, $124.41: reship or refund.
    o = order(
        p["grace"],
        at(22, 10),
        [(product("DPK", "Black"), 1), (product("IWB", "Glacier"), 1)],
        carrier=UPS_GROUND,
        pay="card",
        lost=True,
        **on_time,
        pin=1075,
    )
    ticket(
        p["grace"],
        "where_is_my_order",
        at(2, 9, 30),
        "Order never arrived",
        text(
            "My order {order} never arrived. Tracking said delayed and then nothing for over two weeks. "
            "What happened to it? Grace",
            o,
        ),
        order=o,
        priority="high",
        pin=5015,
    )

    # Lost in transit, $570.28: escalate to logistics.
    o = order(
        p["omar"],
        at(25, 10),
        [(product("TNT"), 1), (product("DSB", "Regular"), 1)],
        carrier=UPS_GROUND,
        pay="card",
        lost=True,
        **on_time,
        pin=1072,
    )
    ticket(
        p["omar"],
        "where_is_my_order",
        at(1, 15, 20),
        "Tent and sleeping bag missing",
        text(
            "Hi, my tent and sleeping bag ({order}) never showed up and the tracking has said nothing useful "
            "for weeks. My trip is next week. Please replace them or refund me. Omar",
            o,
        ),
        order=o,
        channel="phone",
        priority="high",
        pin=5023,
    )

    # Six days late on a $74.79 order; the customer asks for $75.
    o = order(
        p["sofia"],
        _delivered_ago(shop, 3, 11),
        [(product("POK", "Matte Black"), 1)],
        carrier=UPS_GROUND,
        transit=11,
        pay="card",
        **on_time,
        pin=1080,
    )
    ticket(
        p["sofia"],
        "late_delivery",
        at(2, 18, 45),
        "Kettle arrived a week late",
        text(
            "My kettle ({order}) arrived nearly a week after the promised date. I think $75 in store credit "
            "would be fair for the hassle. Sofia",
            o,
        ),
        order=o,
        pin=5016,
    )

    # Exchange for a size in stock.
    o = order(
        p["ethan"],
        _delivered_ago(shop, 9, 5),
        [(product("MCS", "Navy / M"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1081,
    )
    ticket(
        p["ethan"],
        "exchange",
        at(0, 8, 10),
        "Swap sweater size",
        text(
            "The Merino Crew Sweater from {order} is a little small. Can I swap the M for an L in the same "
            "Navy? Ethan",
            o,
        ),
        order=o,
        channel="chat",
        pin=5034,
    )

    # Exchange for a size out of stock.
    o = order(
        p["chloe"],
        _delivered_ago(shop, 6, 4),
        [(product("TRR", "Size 8"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        **on_time,
        pin=1084,
    )
    ticket(
        p["chloe"],
        "exchange",
        at(1, 12, 0),
        "Exchange for a size 9",
        text("The Trail Runners ({order}) are too small. Could I exchange them for a Size 9? Chloe", o),
        order=o,
        pin=5021,
    )

    # Damaged and over $500: escalate to billing.
    o = order(
        p["robert"],
        _delivered_ago(shop, 3, 4),
        [(product("ESP", "Stainless"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        **on_time,
        pin=1088,
    )
    ticket(
        p["robert"],
        "damaged_item",
        at(2, 20, 5),
        "Espresso machine broken",
        text(
            "The Espresso Machine Pro from {order} leaks water from the base and the steam wand is cracked. "
            "I don't want a replacement, I want my money back. Robert Kim",
            o,
        ),
        order=o,
        priority="high",
        pin=5017,
    )

    # Two days past its promise, and a threat of legal action: escalate to legal.
    o = order(
        p["natalie"],
        at(8, 10),
        [(product("LCB", "Size 8"), 1), (product("LCW", "Tan"), 1)],
        carrier=UPS_GROUND,
        transit=12,
        pay="card",
        **on_time,
        pin=1089,
    )
    ticket(
        p["natalie"],
        "where_is_my_order",
        at(1, 9, 15),
        "Where are my boots?",
        text("Where are my boots? Order {order}. Natalie", o),
        order=o,
        priority="high",
        replies=(
            (
                "agent",
                "Sorry for the wait! I've asked the carrier for an update and will get back to you.",
                at(1, 11, 40),
            ),
            (
                "customer",
                text(
                    "This is the second time I'm writing. My boots ({order}) were due two days ago and "
                    "tracking just says delayed. If they are not here by Friday I will have my lawyer "
                    "contact you.",
                    o,
                ),
                at(0, 6, 50),
            ),
        ),
        pin=5019,
    )

    # A received return still waiting for its refund: refund the duvet cover.
    o = order(
        p["kenji"],
        _delivered_ago(shop, 20, 5),
        [(product("OCT", "White / M"), 2), (product("DUV", "Oat"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1071,
    )
    shop.start_return(
        o, [o.items[1]], at(12, 10), "Changed my mind", shipped_back=at(10, 15), received=at(2, 11)
    )
    ticket(
        p["kenji"],
        "billing",
        at(0, 7, 35),
        "Where is my refund?",
        text(
            "According to tracking you received my return (the duvet cover from {order}) two days ago. "
            "When will I get my refund? Kenji",
            o,
        ),
        order=o,
        pin=5030,
    )

    # Refunded in full eleven days ago; asks again.
    o = order(
        p["fatima"],
        _delivered_ago(shop, 25, 5),
        [(product("SOY", "Fig"), 2), (product("BTS", "White"), 1)],
        carrier=USPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1068,
    )
    shop.start_return(
        o,
        list(o.items),
        at(19, 9),
        "Changed my mind",
        shipped_back=at(18, 12),
        received=at(12, 10),
        refunded=at(11, 14),
    )
    ticket(
        p["fatima"],
        "billing",
        at(0, 8, 20),
        "Still no refund",
        text(
            "I returned everything from {order} weeks ago and still haven't seen my refund. Please refund me "
            "now. Fatima",
            o,
        ),
        order=o,
        pin=5035,
    )

    # Final-sale items, change of mind.
    o = order(
        p["megan"],
        _delivered_ago(shop, 5, 3),
        [(product("LBO", "100 ml"), 1), (product("WBS", "M"), 1)],
        carrier=USPS_PRIORITY,
        transit=3,
        pay="paypal",
        **on_time,
        pin=1086,
    )
    ticket(
        p["megan"],
        "return_request",
        at(0, 8, 30),
        "Return body oil and socks",
        text(
            "I'd like to return the body oil and the socks from {order}. They're unopened, I just don't need "
            "them. Megan",
            o,
        ),
        order=o,
        channel="chat",
        pin=5036,
    )

    # Processing, paid partly with store credit: cancel refunds both.
    o = order(
        p["carlos"],
        now - 10 * HOUR,
        [(product("JRG", "Natural"), 1)],
        carrier=UPS_GROUND,
        pay="split",
        store_credit=25,
        capture_h=0.4,
        label_h=30,
        ship_h=40,
        pin=1099,
    )
    ticket(
        p["carlos"],
        "cancellation",
        now - 3 * HOUR,
        "Cancel rug order",
        text("Please cancel {order}. The rug turned out to be too big for our room. Carlos", o),
        order=o,
        pin=5025,
    )

    # Pending: cancel voids the authorisation.
    o = order(
        p["ava"],
        now - 1 * HOUR,
        [(product("CTL", "White"), 1)],
        carrier=UPS_GROUND,
        pay="card",
        capture_h=2,
        label_h=10,
        ship_h=20,
        pin=1101,
    )
    ticket(
        p["ava"],
        "cancellation",
        now - 20 * timedelta(minutes=1),
        "Wrong colour, cancel please",
        text("I just placed {order} but picked the wrong lamp colour. Please cancel it. Ava", o),
        order=o,
        channel="chat",
        pin=5037,
    )

    # Someone else's order: never disclose it.
    o = order(
        p["minh"],
        at(2, 9),
        [(product("HDL"), 1), (product("CTB", "Navy"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        capture_h=1,
        label_h=6,
        ship_h=22,
        pin=1095,
    )
    ticket(
        p["lily"],
        "where_is_my_order",
        at(0, 7, 45),
        "My husband's order",
        text(
            "My husband Minh ordered something from you ({order}). Can you tell me what's in it and when it "
            "arrives? I think it might be a surprise for me. Lily",
            o,
        ),
        pin=5031,
    )

    # Late again, but earlier goodwill already adds up to $90 in 30 days: escalate to supervisor.
    earlier = order(
        p["jordan"],
        _delivered_ago(shop, 27, 5),
        [(product("SOY", "Sea Salt"), 2)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1064,
    )
    tid = ticket(
        p["jordan"],
        "damaged_item",
        at(25, 13),
        "Candle missing from my order",
        text("Only one of the two candles in {order} was in the box. Jordan", earlier),
        order=earlier,
        status="closed",
        replies=(("agent", "So sorry! I've added $40 of store credit for the missing candle.", at(25, 15)),),
        resolution="$40 goodwill credit for a missing item",
        pin=5011,
    )
    shop.credit(p["jordan"], 40, "goodwill", "Missing item", at(25, 15), order=earlier.id, ticket=tid)
    tid = ticket(
        p["jordan"],
        "other",
        at(12, 9),
        "Still waiting",
        text("I was promised a call back about {order} and never got one. Jordan", earlier),
        order=earlier,
        status="closed",
        replies=(("agent", "I'm sorry we let you down. I've added $50 of store credit.", at(12, 10)),),
        resolution="$50 goodwill credit for a missed call back",
        pin=5012,
    )
    shop.credit(p["jordan"], 50, "goodwill", "Apology for missed call back", at(12, 10), ticket=tid)
    o = order(
        p["jordan"],
        _delivered_ago(shop, 4, 9),
        [(product("WEB", "White"), 1)],
        carrier=UPS_GROUND,
        transit=9,
        pay="card",
        **on_time,
        pin=1082,
    )
    ticket(
        p["jordan"],
        "late_delivery",
        at(1, 10, 5),
        "Late again",
        text(
            "Another late delivery: my earbuds ({order}) arrived four days after the promised date. I'd like "
            "the usual credit. Jordan",
            o,
        ),
        order=o,
        pin=5020,
    )

    # Cosmetic damage the customer will keep: at most 20% of $124.
    o = order(
        p["isabel"],
        _delivered_ago(shop, 7, 4),
        [(product("CTL", "Speckled Blue"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        **on_time,
        pin=1083,
    )
    ticket(
        p["isabel"],
        "damaged_item",
        at(0, 8, 0),
        "Small chip on lamp",
        text(
            "The lamp from {order} has a small chip in the glaze at the base. It works fine and I'd keep it if "
            "you can offer a discount. Isabel",
            o,
        ),
        order=o,
        channel="chat",
        pin=5033,
    )

    # Damage reported 45 days after delivery: outside 30 days.
    o = order(
        p["samuel"],
        _delivered_ago(shop, 45, 4),
        [(product("CKN"), 1)],
        carrier=FEDEX_HOME,
        transit=4,
        pay="card",
        **on_time,
        pin=1056,
    )
    ticket(
        p["samuel"],
        "damaged_item",
        at(1, 13, 30),
        "Knife handle cracked",
        text(
            "The handle of my chef's knife ({order}) has cracked along the rivet. I'd like a replacement. "
            "Samuel",
            o,
        ),
        order=o,
        pin=5022,
    )

    # A double charge: escalate to billing. In his history, a parcel lost and refunded in full.
    lost = order(
        p["wei"],
        at(75, 10),
        [(product("HDL"), 1), (product("IWB", "Charcoal"), 1)],
        carrier=USPS_GROUND,
        pay="card",
        lost=True,
        **on_time,
    )
    shop.refund(
        lost,
        lost.row["total"],
        "full",
        "original_payment",
        "Lost in transit",
        at(58, 11),
        items=list(lost.items),
    )
    shop.note(lost, "Carrier declared the parcel lost; refunded in full.", at(58, 11))
    o = order(
        p["wei"],
        _delivered_ago(shop, 10, 5),
        [(product("SKS"), 1), (product("GSC"), 1)],
        carrier=UPS_GROUND,
        transit=5,
        pay="card",
        **on_time,
        pin=1079,
    )
    ticket(
        p["wei"],
        "billing",
        at(0, 9, 0) - 2 * HOUR,
        "Charged twice",
        text(
            "My card statement shows two charges of ${total} for order {order}. Please fix this. Wei",
            o,
            total=f"{o.row['total']:.2f}",
        ),
        order=o,
        pin=5027,
    )

    # Two customers with the same name, each with a parcel on its way.
    for key, days, number in (("maria_h", 2, 1097), ("maria_t", 3, 1093)):
        order(
            p[key],
            at(days, 16),
            shop.random_lines(),
            carrier=UPS_GROUND,
            transit=5,
            pay="card",
            capture_h=1,
            label_h=6,
            ship_h=20,
            pin=number,
        )

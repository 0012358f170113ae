#!/usr/bin/env python3
"""Convert a value between units (length, mass, volume, area, speed, time, data,
pressure, energy, power, angle, temperature).

Usage:
  convert.py VALUE FROM_UNIT [to|in] TO_UNIT[,TO_UNIT...] [--precision N] [--json]
  convert.py --list [CATEGORY]
  convert.py --help

Examples:
  convert.py 5 km mi
  convert.py 72 F to C
  convert.py 1.5 GiB MB,GB --precision 4
  convert.py 30 "fl oz" ml

Exit status: 0 on success, 2 on bad input (message on stderr).
Python 3 standard library only; no files, no network.
"""
import difflib
import json
import re
import sys
from decimal import Decimal, InvalidOperation, getcontext

getcontext().prec = 40

# category -> {canonical unit: (factor to base unit as exact decimal string, description, aliases)}
UNITS = {
    "length": {
        "m": ("1", "metre", ["meter", "meters", "metre", "metres"]),
        "km": ("1000", "kilometre", ["kilometer", "kilometers", "kilometre", "kilometres"]),
        "cm": ("0.01", "centimetre", ["centimeter", "centimeters", "centimetre", "centimetres"]),
        "mm": ("0.001", "millimetre", ["millimeter", "millimeters", "millimetre", "millimetres"]),
        "um": ("0.000001", "micrometre", ["µm", "micron", "microns", "micrometer", "micrometers"]),
        "nm": ("0.000000001", "nanometre", ["nanometer", "nanometers"]),
        "in": ("0.0254", "inch", ["inch", "inches", '"']),
        "ft": ("0.3048", "foot", ["foot", "feet", "'"]),
        "yd": ("0.9144", "yard", ["yard", "yards"]),
        "mi": ("1609.344", "mile (international)", ["mile", "miles"]),
        "nmi": ("1852", "nautical mile", ["nautical mile", "nautical miles"]),
    },
    "mass": {
        "kg": ("1", "kilogram", ["kilogram", "kilograms", "kilo", "kilos"]),
        "g": ("0.001", "gram", ["gram", "grams"]),
        "mg": ("0.000001", "milligram", ["milligram", "milligrams"]),
        "ug": ("0.000000001", "microgram", ["µg", "mcg", "microgram", "micrograms"]),
        "t": ("1000", "tonne (metric ton)", ["tonne", "tonnes", "metric ton", "metric tons"]),
        "lb": ("0.45359237", "pound", ["lbs", "pound", "pounds"]),
        "oz": ("0.028349523125", "ounce (avoirdupois)", ["ounce", "ounces"]),
        "st": ("6.35029318", "stone", ["stone", "stones"]),
        "short_ton": ("907.18474", "US short ton (2000 lb)", ["us ton", "short ton"]),
        "long_ton": ("1016.0469088", "imperial long ton (2240 lb)", ["uk ton", "long ton"]),
    },
    "volume": {
        "l": ("1", "litre", ["L", "liter", "liters", "litre", "litres"]),
        "ml": ("0.001", "millilitre", ["mL", "milliliter", "milliliters", "millilitre", "millilitres"]),
        "cl": ("0.01", "centilitre", ["cL", "centiliter", "centilitre"]),
        "dl": ("0.1", "decilitre", ["dL", "deciliter", "decilitre"]),
        "m3": ("1000", "cubic metre", ["m^3", "m³", "cubic meter", "cubic metre"]),
        "cm3": ("0.001", "cubic centimetre", ["cc", "cm^3", "cm³"]),
        "gal": ("3.785411784", "US gallon", ["gallon", "gallons", "us gal"]),
        "qt": ("0.946352946", "US liquid quart", ["quart", "quarts"]),
        "pt": ("0.473176473", "US liquid pint", ["pint", "pints"]),
        "cup": ("0.2365882365", "US cup", ["cups"]),
        "floz": ("0.0295735295625", "US fluid ounce", ["fl oz", "fl. oz", "fluid ounce", "fluid ounces"]),
        "tbsp": ("0.01478676478125", "US tablespoon", ["tablespoon", "tablespoons"]),
        "tsp": ("0.00492892159375", "US teaspoon", ["teaspoon", "teaspoons"]),
        "imp_gal": ("4.54609", "imperial gallon", ["imperial gallon", "uk gallon"]),
        "imp_pt": ("0.56826125", "imperial pint", ["imperial pint", "uk pint"]),
    },
    "area": {
        "m2": ("1", "square metre", ["m^2", "m²", "sq m", "square meter", "square metre"]),
        "km2": ("1000000", "square kilometre", ["km^2", "km²", "sq km"]),
        "cm2": ("0.0001", "square centimetre", ["cm^2", "cm²"]),
        "mm2": ("0.000001", "square millimetre", ["mm^2", "mm²"]),
        "ha": ("10000", "hectare", ["hectare", "hectares"]),
        "acre": ("4046.8564224", "acre", ["acres", "ac"]),
        "ft2": ("0.09290304", "square foot", ["ft^2", "ft²", "sq ft", "square foot", "square feet"]),
        "in2": ("0.00064516", "square inch", ["in^2", "in²", "sq in"]),
        "yd2": ("0.83612736", "square yard", ["yd^2", "yd²", "sq yd"]),
        "mi2": ("2589988.110336", "square mile", ["mi^2", "mi²", "sq mi"]),
    },
    "speed": {
        "m/s": ("1", "metre per second", ["mps", "meters per second", "metres per second"]),
        "km/h": ("0.27777777777777777777777777777777777778", "kilometre per hour", ["kph", "kmh", "km/hr"]),
        "mph": ("0.44704", "mile per hour", ["mi/h", "miles per hour"]),
        "kn": ("0.51444444444444444444444444444444444444", "knot", ["knot", "knots", "kt"]),
        "ft/s": ("0.3048", "foot per second", ["fps"]),
    },
    "time": {
        "s": ("1", "second", ["sec", "secs", "second", "seconds"]),
        "ms": ("0.001", "millisecond", ["millisecond", "milliseconds"]),
        "us": ("0.000001", "microsecond", ["µs", "microsecond", "microseconds"]),
        "ns": ("0.000000001", "nanosecond", ["nanosecond", "nanoseconds"]),
        "min": ("60", "minute", ["mins", "minute", "minutes"]),
        "h": ("3600", "hour", ["hr", "hrs", "hour", "hours"]),
        "d": ("86400", "day", ["day", "days"]),
        "wk": ("604800", "week", ["week", "weeks"]),
        "yr": ("31557600", "year (365.25 days)", ["year", "years", "y"]),
    },
    "data": {
        "bit": ("0.125", "bit", ["bits"]),
        "B": ("1", "byte", ["byte", "bytes"]),
        "kB": ("1000", "kilobyte (SI)", ["KB", "kilobyte", "kilobytes"]),
        "MB": ("1000000", "megabyte (SI)", ["megabyte", "megabytes"]),
        "GB": ("1000000000", "gigabyte (SI)", ["gigabyte", "gigabytes"]),
        "TB": ("1000000000000", "terabyte (SI)", ["terabyte", "terabytes"]),
        "PB": ("1000000000000000", "petabyte (SI)", ["petabyte", "petabytes"]),
        "KiB": ("1024", "kibibyte", ["kibibyte", "kibibytes"]),
        "MiB": ("1048576", "mebibyte", ["mebibyte", "mebibytes"]),
        "GiB": ("1073741824", "gibibyte", ["gibibyte", "gibibytes"]),
        "TiB": ("1099511627776", "tebibyte", ["tebibyte", "tebibytes"]),
        "kbit": ("125", "kilobit", ["kb", "Kb", "kilobit", "kilobits"]),
        "Mbit": ("125000", "megabit", ["Mb", "megabit", "megabits"]),
        "Gbit": ("125000000", "gigabit", ["Gb", "gigabit", "gigabits"]),
    },
    "pressure": {
        "Pa": ("1", "pascal", ["pascal", "pascals"]),
        "kPa": ("1000", "kilopascal", ["kilopascal", "kilopascals"]),
        "MPa": ("1000000", "megapascal", ["megapascal", "megapascals"]),
        "bar": ("100000", "bar", ["bars"]),
        "mbar": ("100", "millibar", ["millibar", "millibars", "hPa"]),
        "atm": ("101325", "standard atmosphere", ["atmosphere", "atmospheres"]),
        "psi": ("6894.757293168361336722673445", "pound per square inch", ["lbf/in2"]),
        "mmHg": ("133.322387415", "millimetre of mercury", []),
        "Torr": ("133.32236842105263157894736842105263158", "torr (1/760 atm)", ["torr"]),
        "inHg": ("3386.389", "inch of mercury", []),
    },
    "energy": {
        "J": ("1", "joule", ["joule", "joules"]),
        "kJ": ("1000", "kilojoule", ["kilojoule", "kilojoules"]),
        "MJ": ("1000000", "megajoule", ["megajoule", "megajoules"]),
        "cal": ("4.184", "thermochemical calorie", ["calorie", "calories"]),
        "kcal": ("4184", "kilocalorie (food Calorie)", ["kilocalorie", "kilocalories", "Cal"]),
        "Wh": ("3600", "watt-hour", ["watt-hour", "watt hour", "watt-hours"]),
        "kWh": ("3600000", "kilowatt-hour", ["kilowatt-hour", "kilowatt hour", "kilowatt-hours"]),
        "BTU": ("1055.05585262", "British thermal unit (IT)", ["btu", "Btu"]),
        "eV": ("0.0000000000000000001602176634", "electronvolt", ["electronvolt", "electronvolts"]),
    },
    "power": {
        "W": ("1", "watt", ["watt", "watts"]),
        "kW": ("1000", "kilowatt", ["kilowatt", "kilowatts"]),
        "MW": ("1000000", "megawatt", ["megawatt", "megawatts"]),
        "hp": ("745.69987158227022", "mechanical horsepower", ["horsepower"]),
        "BTU/h": ("0.29307107017222222222", "BTU per hour", ["btu/h", "btu/hr"]),
    },
    "angle": {
        "rad": ("1", "radian", ["radian", "radians"]),
        "deg": ("0.017453292519943295769236907684886127134", "degree", ["°", "degree", "degrees"]),
        "grad": ("0.015707963267948966192313216916397514421", "gradian", ["gon", "gradian", "gradians"]),
        "turn": ("6.2831853071795864769252867665590057684", "full turn", ["turns", "rev", "revolution", "revolutions"]),
        "arcmin": ("0.00029088820866572159615394846141476878557", "minute of arc", ["arcminute", "arcminutes"]),
        "arcsec": ("0.0000048481368110953599358991410235794797595", "second of arc", ["arcsecond", "arcseconds"]),
    },
    # Temperature is affine: (scale, offset) so that kelvin = value * scale + offset.
    "temperature": {
        "C": (None, "degree Celsius", ["°C", "degC", "celsius", "degrees celsius", "centigrade"]),
        "F": (None, "degree Fahrenheit", ["°F", "degF", "fahrenheit", "degrees fahrenheit"]),
        "K": (None, "kelvin", ["kelvin", "kelvins"]),
        "R": (None, "degree Rankine", ["°R", "degR", "rankine", "degrees rankine"]),
    },
}

TEMPERATURE = {
    "C": (Decimal(1), Decimal("273.15")),
    "F": (Decimal(5) / Decimal(9), Decimal("459.67") * Decimal(5) / Decimal(9)),
    "K": (Decimal(1), Decimal(0)),
    "R": (Decimal(5) / Decimal(9), Decimal(0)),
}

CONNECTORS = {"to", "in", "into", "as", "->", "=>", "="}


class InputError(Exception):
    pass


def _norm(text):
    return " ".join(text.replace("_", " ").split()).lower()


def build_index():
    exact, folded = {}, {}
    for category, units in UNITS.items():
        for unit, (_factor, _desc, aliases) in units.items():
            for name in [unit] + aliases:
                exact[name] = (category, unit)
                folded.setdefault(_norm(name), set()).add((category, unit))
    return exact, folded


EXACT, FOLDED = build_index()


def resolve_unit(text):
    """Return (category, unit) for a unit name, or raise InputError."""
    name = text.strip()
    if name in EXACT:
        return EXACT[name]
    matches = FOLDED.get(_norm(name), set())
    if len(matches) == 1:
        return next(iter(matches))
    if len(matches) > 1:
        options = " or ".join(sorted(f"{u} = {UNITS[c][u][1]}" for c, u in matches))
        raise InputError(f"ambiguous unit '{name}': did you mean {options}? Unit case matters here.")
    suggestions = difflib.get_close_matches(name, list(EXACT), n=3, cutoff=0.6)
    hint = f" Did you mean: {', '.join(suggestions)}?" if suggestions else ""
    raise InputError(f"unknown unit '{name}'.{hint} Run with --list to see all units.")


def try_resolve(text):
    try:
        return resolve_unit(text)
    except InputError:
        return None


def to_base(value, category, unit):
    if category == "temperature":
        scale, offset = TEMPERATURE[unit]
        kelvin = value * scale + offset
        if kelvin < 0:
            raise InputError(f"{value} {unit} is below absolute zero.")
        return kelvin
    return value * Decimal(UNITS[category][unit][0])


def from_base(value, category, unit):
    if category == "temperature":
        scale, offset = TEMPERATURE[unit]
        return (value - offset) / scale
    return value / Decimal(UNITS[category][unit][0])


def format_number(value, precision):
    """Round to `precision` significant digits; plain notation when reasonable."""
    if value == 0:
        return "0"
    clean = Decimal(format(value, ".14e"))  # drop arithmetic noise beyond 15 digits
    if clean == clean.to_integral_value() and abs(clean) < Decimal("1e15"):
        return str(int(clean))  # exact integers are printed in full
    rounded = Decimal(format(clean, f".{precision - 1}e"))
    if rounded == rounded.to_integral_value() and abs(rounded) < Decimal("1e15"):
        return str(int(rounded))
    exponent = rounded.adjusted()
    if -7 <= exponent < 15:
        text = format(rounded, "f")
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return text
    mantissa, exp = format(rounded, f".{precision - 1}e").split("e")
    if "." in mantissa:
        mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}e{int(exp)}"


NUMBER_RE = re.compile(r"^([-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)(.*)$")


def parse_expression(tokens):
    """Split tokens into (value, from_unit, [to_units])."""
    if not tokens:
        raise InputError("nothing to convert. Example: convert.py 5 km mi")
    tokens = [t for t in " ".join(tokens).split() if t]
    match = NUMBER_RE.match(tokens[0])
    if not match:
        if "," in tokens[0]:
            raise InputError(f"bad number '{tokens[0]}': use a dot for decimals and no thousands separators.")
        raise InputError(f"bad number '{tokens[0]}': the first argument must be a number, e.g. 5 or -40 or 1.5e3.")
    number, rest = match.groups()
    if rest.startswith(","):
        raise InputError(f"bad number '{tokens[0]}': use a dot for decimals and no thousands separators.")
    try:
        value = Decimal(number)
    except InvalidOperation:
        raise InputError(f"bad number '{number}'.") from None
    if value != 0 and not -100 <= value.adjusted() <= 100:
        raise InputError(f"value '{number}' is out of range (use a magnitude from 1e-100 up to 1e101).")
    units = ([rest] if rest else []) + tokens[1:]
    if len(units) < 2:
        raise InputError("need a source and a target unit. Example: convert.py 5 km mi")
    for split in range(1, len(units)):
        left, right = units[:split], units[split:]
        candidates = []
        if right[0].lower() in CONNECTORS and len(right) > 1:
            candidates.append(right[1:])
        candidates.append(right)
        source = try_resolve(" ".join(left))
        if source is None:
            continue
        for target in candidates:
            targets = [t.strip() for t in " ".join(target).split(",") if t.strip()]
            if targets and all(try_resolve(t) for t in targets):
                return value, " ".join(left), targets
    # No clean split: report the most useful error.
    resolve_unit(units[0])
    last = units[-1].split(",")
    for t in last:
        if t.strip():
            resolve_unit(t.strip())
    raise InputError(f"could not understand '{' '.join(units)}'. Example: convert.py 5 km to mi")


def list_units(category=None):
    if category is not None and category.lower() not in UNITS:
        raise InputError(f"unknown category '{category}'. Categories: {', '.join(UNITS)}.")
    lines = []
    for cat, units in UNITS.items():
        if category is not None and cat != category.lower():
            continue
        lines.append(f"{cat}:")
        for unit, (_f, desc, aliases) in units.items():
            alias_text = f"  (also: {', '.join(aliases)})" if aliases else ""
            lines.append(f"  {unit:<10} {desc}{alias_text}")
    return "\n".join(lines)


def convert(tokens, precision):
    value, from_text, to_texts = parse_expression(tokens)
    from_cat, from_unit = resolve_unit(from_text)
    results = []
    for to_text in to_texts:
        to_cat, to_unit = resolve_unit(to_text)
        if to_cat != from_cat:
            raise InputError(f"cannot convert {from_cat} ({from_unit}) to {to_cat} ({to_unit}).")
        result = from_base(to_base(value, from_cat, from_unit), to_cat, to_unit)
        results.append({
            "value": format_number(value, 15),
            "from": from_unit,
            "to": to_unit,
            "result": format_number(result, precision),
            "category": from_cat,
            "factor": None if from_cat == "temperature" else format_number(
                from_base(to_base(Decimal(1), from_cat, from_unit), to_cat, to_unit), precision),
        })
    return results


def main(argv):
    tokens, precision, as_json = [], 6, False
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-h", "--help"):
            print(__doc__.strip())
            return 0
        if arg == "--list":
            category = argv[i + 1] if i + 1 < len(argv) else None
            print(list_units(category))
            return 0
        if arg == "--json":
            as_json = True
        elif arg == "--precision" or arg.startswith("--precision="):
            if "=" in arg:
                raw = arg.split("=", 1)[1]
            else:
                if i + 1 >= len(argv):
                    raise InputError("--precision needs a number of significant digits (1-15).")
                i += 1
                raw = argv[i]
            if not raw.isdigit() or not 1 <= int(raw) <= 15:
                raise InputError(f"--precision must be an integer from 1 to 15, got '{raw}'.")
            precision = int(raw)
        elif arg.startswith("--"):
            raise InputError(f"unknown option '{arg}'. Options: --precision N, --json, --list, --help.")
        else:
            tokens.append(arg)
        i += 1
    results = convert(tokens, precision)
    if as_json:
        print(json.dumps(results if len(results) > 1 else results[0], ensure_ascii=False))
        return 0
    for r in results:
        print(f"{r['value']} {r['from']} = {r['result']} {r['to']}")
    for r in results:
        if r["factor"] is not None:
            print(f"({r['category']}: 1 {r['from']} = {r['factor']} {r['to']})")
        else:
            print(f"({r['category']})")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)

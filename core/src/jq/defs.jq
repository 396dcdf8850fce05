# Definitions in jq, layered over jaq's standard library (later definitions shadow earlier ones).
#
# The string builtins agents use most name themselves when given a non-string, as jq's do,
# instead of jaq's anonymous "cannot use null as string"; and where jaq and jq 1.6 disagree on
# something agents write (`tostring` of `3.0`, `from_entries` with `name`, `null | index(x)`,
# `ltrimstr` of a non-string, `leaf_paths`, `tostream`), jq's behaviour wins.
#
# The `lro_*_` filters called here (`lro_test_`, `lro_affix_`, `lro_tojson_`, `lro_ltrimstr_`,
# `lro_rtrimstr_`) are Rust-defined builtins (builtins.rs): jq 1.6's number format, which jaq's
# `tojson` does not write, and checks that cost too much in jq when they run once per record.
def lro_not_string($op; $what):
  error("\($op): \(type) (\(tojson | if length > 60 then .[:57] + "..." else . end)) \($what)");
def lro_unmatchable($op): lro_not_string($op; "cannot be matched, as it is not a string");
def test(re; flags): if isstring then lro_test_(re; flags) else lro_unmatchable("test") end;
def test(re): test(re; "");
def match(re; flags): if isstring then matches(re; flags)[] | .[0] + { captures: .[1:] } else lro_unmatchable("match") end;
def match(re): match(re; "");
def capture(re; flags): if isstring then matches(re; flags)[] | capture_of_match else lro_unmatchable("capture") end;
def capture(re): capture(re; "");
def scan(re; flags): if isstring then scan_(re; "g" + flags) else lro_unmatchable("scan") end;
def scan(re): scan(re; "");
def split(re; flags): if isstring then split_(re; flags + "g") else lro_unmatchable("split") end;
def splits(re; flags): split(re; flags)[];
def splits(re): splits(re; "");
def sub(re; f; flags):
  def handle: if isarray then capture_of_match | f end;
  if isstring then reduce split_matches(re; flags)[] as $x (""; . + ($x | handle)) else lro_unmatchable("sub") end;
def sub(re; f): sub(re; f; "");
def gsub(re; f; flags): sub(re; f; "g" + flags);
def gsub(re; f): sub(re; f; "g");
def startswith($s): lro_affix_($s; true);
def endswith($s): lro_affix_($s; false);
def ltrimstr($s): if isstring and ($s | isstring) then lro_ltrimstr_($s) else . end;
def rtrimstr($s): if isstring and ($s | isstring) then lro_rtrimstr_($s) else . end;
def tojson: lro_tojson_;
def tostring: if isstring then . else lro_tojson_ end;
def @json: lro_tojson_;
def @text: tostring;
def join($x): reduce .[] as $i (null;
  (if . == null then "" else . + $x end) + ($i | if . == null then "" elif isstring or isarray or isobject then . else lro_tojson_ end)) // "";
def from_entries: map({(.key // .k // .name // .Name // .K // .Key | if isstring then . else lro_tojson_ end):
  (if has("value") then .value elif has("Value") then .Value else .v end)}) | add + {} // {};
def with_entries(f): to_entries | map(f) | from_entries;
def index($i): if . == null then null else indices($i) | .[0] end;
def rindex($i): if . == null then null else indices($i) | .[-1:][0] end;
def leaf_paths: paths(scalars);
def tostream: path(def r: (.[]? | r), .; r) as $p | getpath($p) | reduce path(.[]?) as $q ([$p, .]; [$p + $q]);
def @html: tostring | escape_html;
def @uri: tostring | encode_uri;
def @base64: tostring | encode_base64;
def @base64d: tostring | decode_base64;
def input_filename: null;
def env: $ENV;
# jq's own definitions (jq 1.6's builtin.jq) where jaq has none or another meaning.
def IN(s): any(s == .; .);
def IN(src; s): any(src == s; .);
def INDEX(stream; idx_expr): reduce stream as $row ({}; .[$row | idx_expr | tostring] |= $row);
def INDEX(idx_expr): INDEX(.[]; idx_expr);
def JOIN($idx; idx_expr): [.[] | [., $idx[idx_expr]]];
def JOIN($idx; stream; idx_expr): stream | [., $idx[idx_expr]];
def JOIN($idx; stream; idx_expr; join_expr): stream | [., $idx[idx_expr]] | join_expr;
def ANY(g; cond): any(g; cond);
def ALL(g; cond): all(g; cond);
def nth($n; f): if $n < 0 then error("nth doesn't support negative indices") else last(limit($n + 1; f)) end;
def lro_del_one_($k): .[$k] |= empty;
def lro_delpath_($p):
  if ($p | length) == 0 then null
  elif getpath($p[:-1]) == null then .
  else getpath($p[:-1]) |= lro_del_one_($p[-1]) end;
def delpaths($paths):
  if ($paths | type) != "array" then error("Paths must be specified as an array")
  else reduce ($paths | unique | reverse[]) as $p (.; lro_delpath_($p)) end;
def del(f): delpaths([path(f)]);
def walk(f): def w: if type == "object" then map_values(w) elif type == "array" then map(w) else . end | f; w;
def flatten($d): if $d < 0 then error("flatten depth must not be negative")
  else reduce .[] as $i ([]; if ($i | type) == "array" and $d > 0 then . + ($i | flatten($d - 1)) else . + [$i] end) end;
def truncate_stream(stream): . as $n | null | stream | . as $input | if (.[0] | length) > $n then setpath([0]; .[0][$n:]) else empty end;
def fromstream(f): { x: null, e: false } as $init
  | foreach f as $i ($init;
      if .e then $init else . end
      | if $i | length == 2
        then setpath(["e"]; $i[0] | length == 0) | setpath(["x"] + $i[0]; $i[1])
        else setpath(["e"]; $i[0] | length == 1) end;
      if .e then .x else empty end);
def ascii: [.] | implode;
def todate: strftime("%Y-%m-%dT%H:%M:%SZ");
def utf8bytelength: if isstring then tobytes | length else error("\(type) (\(tojson)) only strings have UTF-8 byte length") end;
def format($f):
  if $f == "text" then @text elif $f == "json" then @json elif $f == "csv" then @csv elif $f == "tsv" then @tsv
  elif $f == "html" then @html elif $f == "uri" then @uri elif $f == "sh" then @sh
  elif $f == "base64" then @base64 elif $f == "base64d" then @base64d
  else error("\($f) is not a valid format") end;
def toarray: if isarray then . else [.] end;
def trimstr($s): ltrimstr($s) | rtrimstr($s);
def recurse_down: recurse;
def have_decnum: false;
def have_literal_numbers: false;
def builtins: lro_builtins_;

package conform

import (
	"fmt"
	"strconv"
	"strings"
)

// The suite's cases, in id order. The table is append-only: a case's id is
// its position, so new cases go at the end of build (after the last
// section), whatever their rule, and no case is ever removed or edited —
// a wrong case is superseded by a new one, never renumbered. The test
// TestSuiteAppendOnly pins a digest of the first frozenCases cases.

const (
	defTask = "task-1"
	defTool = "echo"
)

type builder struct {
	cases []Case
	rule  string
}

func (b *builder) section(rule string) { b.rule = rule }

// add appends a case with the default task id and tool name.
func (b *builder) add(note, args string) { b.call(note, defTask, defTool, args) }

func (b *builder) call(note, task, tool, args string) {
	b.cases = append(b.cases, Case{ID: len(b.cases) + 1, Rule: b.rule, Note: note, Task: task, Tool: tool, Args: args})
}

// nums adds one case per number literal, as the only element of an array.
func (b *builder) nums(lits ...string) {
	for _, l := range lits {
		note := "the number " + l
		if len(l) > 40 {
			note = fmt.Sprintf("the number %s…%s (%d characters)", l[:6], l[len(l)-6:], len(l))
		}
		b.add(note, "["+l+"]")
	}
}

// build returns the suite, section by section, in the order vectors prints
// it. It is one long table on purpose: read top to bottom, it is the
// suite's text, and splitting it would scatter the case ids.
func build() []Case {
	b := &builder{}

	b.section("structure")
	b.add("an empty object", `{}`)
	b.add("an empty array", `[]`)
	b.add("null as the arguments", `null`)
	b.add("true as the arguments", `true`)
	b.add("false as the arguments", `false`)
	b.add("a number as the arguments", `42`)
	b.add("a string as the arguments", `"hello"`)
	b.add("an empty string as the arguments", `""`)
	b.add("nested empty containers", `[[],{},[[]],[{}],{"a":{}},{"a":[]}]`)
	b.add("literals in an array", `[null,true,false]`)
	b.add("array order is kept", `[3,1,2,"b","a"]`)
	b.add("an object of every kind of value", `{"s":"x","n":1,"t":true,"f":false,"z":null,"a":[1],"o":{"k":"v"}}`)

	b.section("whitespace")
	b.add("spaces around every token", ` { "b" : [ 1 , 2 ] , "a" : { } } `)
	b.add("tabs between tokens", "{\t\"a\"\t:\t1\t}")
	b.add("white space inside empty containers", `[ [ ] , { } ]`)
	b.add("white space around a scalar", `   7   `)
	b.add("white space in strings is kept", `{"a":" x  y "}`)
	b.add("a string of tabs, escaped", `["\t\t"]`)

	b.section("order-ascii")
	b.add("two names out of order", `{"b":1,"a":2}`)
	b.add("upper case sorts before lower case", `{"a":1,"B":2,"A":3,"b":4}`)
	b.add("a prefix sorts first", `{"aa":1,"a":2,"aaa":3}`)
	b.add("the empty name sorts first", `{"a":1,"":2}`)
	b.add("digits, punctuation and letters", `{"_":1,"-":2,"~":3,"Z":4,"a1":5,"1a":6,"!":7,"@":8}`)
	b.add("space sorts before every other printable character", `{"a b":1,"a":2,"a!":3,"a ":4}`)
	b.add("nested objects are sorted too", `{"z":{"y":1,"x":2},"a":{"c":[{"e":1,"d":2}]}}`)
	b.add("objects inside arrays are sorted", `[{"b":1,"a":2},{"d":3,"c":4}]`)
	b.add("names are compared after unescaping", `{"\u0062":1,"a":2}`)
	b.add("a name with a quote and a backslash", `{"a\"":1,"a\\":2,"a":3}`)
	b.add("names that are not array indices but start with digits", `{"1a":1,"1 ":2,"1-":3,"1_":4}`)
	b.add("values do not take part in the order", `{"b":"a","a":"b"}`)

	b.section("order-utf16")
	b.add("an astral character sorts before U+E000 in UTF-16", `{"\ue000":1,"😀":2}`)
	b.add("an astral character sorts before U+FFFF", `{"\uffff":1,"😀":2}`)
	b.add("U+10000 sorts before U+FF01", `{"！":1,"𐀀":2}`)
	b.add("U+1D11E sorts before U+FB00", `{"ﬀ":1,"𝄞":2}`)
	b.add("U+1F389 sorts before U+F900", `{"豈":1,"🎉":2}`)
	b.add("the astral character is written as an escape", `{"\ue000":1,"\ud83d\ude00":2}`)
	b.add("a common prefix, then astral against U+E000", `{"a\ue000":1,"a😀":2,"a":3}`)
	b.add("U+FFFD against an astral character", `{"\ufffd":1,"🚀":2}`)
	b.add("private use, specials and astral characters", `{"\uf8ff":1,"\ufeff":2,"😀":3}`)
	b.add("CJK sorts before an astral character in both orders", `{"😀":1,"中":2}`)
	b.add("Latin-1 against ASCII", `{"é":1,"z":2,"e":3}`)
	b.add("Greek, Cyrillic and Hebrew", `{"ש":1,"ж":2,"λ":3}`)
	b.add("astral characters against each other", `{"😀":1,"🎉":2,"𝄞":3,"𐀀":4}`)
	b.add("a nested object with astral and U+E000 names", `{"o":{"\ue001":1,"🙂":2}}`)
	b.add("many names across the planes", `{"\uffff":1,"\ue000":2,"😀":3,"\u0080":4,"z":5,"é":6,"中":7,"𝄞":8}`)

	b.section("order-index")
	b.add("an array-index name sorts before letters", `{"a":1,"1":2}`)
	b.add("array-index names in numeric order", `{"10":1,"9":2,"2":3}`)
	b.add("array-index names before punctuation", `{"!":1,"0":2,"~":3}`)
	b.add("0 is an array index", `{"b":1,"0":2}`)
	b.add("01 is not an array index", `{"01":1,"1":2,"2":3}`)
	b.add("4294967294 is the largest array index", `{"4294967294":1,"5":2,"a":3}`)
	b.add("4294967295 is not an array index", `{"4294967295":1,"5":2}`)
	b.add("-1 is not an array index", `{"-1":1,"1":2}`)
	b.add("1.0 is not an array index", `{"1.0":1,"2":2}`)
	b.add("+1 and 1e3 are not array indices", `{"+1":1,"1e3":2,"3":3}`)
	b.add("a name with a space is not an array index", `{" 1":1,"1 ":2,"2":3}`)
	b.add("an integer past 2^32 is not an array index", `{"4294967296":1,"9007199254740993":2,"7":3}`)
	b.add("many array-index names", `{"100":1,"20":2,"3":3,"1000":4,"0":5,"11":6}`)
	b.add("array-index names among other names", `{"b":1,"10":2,"a":3,"2":4,"_":5,"01":6}`)
	b.add("array-index names in a nested object", `{"x":{"12":1,"3":2,"b":3}}`)
	b.add("array-index names in objects inside an array", `[{"2":1,"10":2},{"b":1,"1":2}]`)
	b.add("an escaped array-index name", `{"\u0031\u0030":1,"9":2}`)
	b.add("only array-index names", `{"3":1,"22":2,"111":3}`)
	b.add("an array index with astral and U+E000 names", `{"😀":1,"\ue000":2,"7":3}`)
	b.add("the largest array index against the first non-index", `{"4294967295":1,"4294967294":2,"0":3}`)

	b.section("names-special")
	b.add("__proto__ is an ordinary name", `{"__proto__":1}`)
	b.add("__proto__ with an object value", `{"__proto__":{"polluted":true},"b":2}`)
	b.add("names of Object.prototype's methods", `{"toString":1,"constructor":2,"valueOf":3,"hasOwnProperty":4}`)
	b.add("toJSON is an ordinary name", `{"toJSON":"no","a":1}`)
	b.add("a one-space name against the empty name", `{" ":1,"":2}`)
	b.add("a name made of escapes only", `{"\n\t":1,"\"":2,"\\":3}`)
	b.add("a very long name", `{"`+strings.Repeat("n", 300)+`":1,"m":2}`)
	b.add("a name that looks like JSON", `{"{\"a\":1}":1,"[]":2}`)

	b.section("duplicate-names")
	b.add("a repeated name: the last value wins", `{"a":1,"a":2}`)
	b.add("a repeated name among others", `{"a":1,"b":2,"a":3}`)
	b.add("three copies of a name", `{"a":1,"a":2,"a":3}`)
	b.add("the repeated values are of different kinds", `{"a":{"x":1},"a":[2]}`)
	b.add("repeated objects are not merged", `{"x":{"a":1},"x":{"b":2}}`)
	b.add("a repeated name in a nested object", `{"o":{"k":1,"k":2}}`)
	b.add("a repeated name in an object in an array", `[{"k":1,"k":2}]`)
	b.add("a repeated name spelt with an escape", `{"a":1,"\u0061":2}`)
	b.add("a repeated array-index name", `{"1":"x","b":0,"1":"y"}`)

	b.section("number-integer")
	b.nums("0", "1", "-1", "1.0", "1.50", "100", "1e2", "1E2", "1e+2", "0.0", "10.0e0", "123456789",
		"2147483648", "4294967296", "9007199254740991", "9007199254740992", "-9007199254740992", "0e10", "5.0e1", "1000000.000")

	b.section("number-negative-zero")
	b.nums("-0", "-0.0", "-0e0", "-0.0e-5", "-1e-400")
	b.add("negative zero as an object member", `{"z":-0}`)
	b.add("negative zero as the arguments", `-0`)

	b.section("number-exponent")
	b.nums("1e16", "1e17", "1e20", "1e21", "1e22", "1.5e300", "123e18", "123e19", "9.999999999999999e20",
		"999999999999999900000", "1000000000000000000000", "1e100", "1e308", "-1e21", "-1e20", "1.2345e25", "5e21", "1E21", "12e20",
		"999999999999999999999", "100000000000000000000", "0.1e22", "1e23")

	b.section("number-fraction")
	b.nums("0.1", "0.5", "-0.5", "0.001", "0.0001", "0.00001", "0.000001", "0.0000001", "1e-6", "1e-7", "1.5e-7",
		"1.23e-5", "123e-10", "1e-10", "1e-100", "-1e-7", "0.000001234", "0.0000012345", "1e-5", "4.5e-6",
		"0.0000009999999999999999", "0.00000099", "0.1e-6", "1.000001e-6")

	b.section("number-precision")
	b.nums("0.30000000000000004", "1.0000000000000002", "0.1000000000000000055511151231257827", "3.141592653589793238462643383279502884",
		"5e-324", "4.9e-324", "2.2250738585072014e-308", "2.225073858507201e-308", "1.7976931348623157e308",
		"123456789.12345678", "0.1e1", "1.7976931348623157e+308", "4.35", "2.5", "1.005", "9007199254740993.5",
		"100.00000000000001", "1.23456789012345678901234567890", "0.000000000000000000000000000001e30", "-2.718281828459045")

	b.section("number-big-integer")
	b.nums("9007199254740993", "9007199254740995", "-9007199254740993", "18446744073709551615", "18446744073709551616",
		"12345678901234567890", "123456789012345678901234567890", "99999999999999999999", "295147905179352825856",
		"9223372036854775807", "9223372036854775808", "-9223372036854775809")

	b.section("number-overflow")
	b.nums("1e309", "1e400", "-1e400", "1.8e308", "1.7976931348623159e308", "1"+strings.Repeat("0", 309), "123e999999")
	b.add("an out-of-range number as an object member", `{"big":1e400,"ok":1}`)

	b.section("number-underflow")
	b.nums("1e-400", "1e-324", "2e-324", "3e-324", "2.4703282292062328e-324", "0.0000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000000001")

	b.section("string-escape")
	b.add("a quote", `["\""]`)
	b.add("a backslash", `["\\"]`)
	b.add("an escaped solidus is written as /", `["\/"]`)
	b.add("a solidus is not escaped", `["a/b"]`)
	b.add("an escaped letter is written as the letter", `["\u0041"]`)
	b.add("an escape in upper case hex", `["\u00E9"]`)
	b.add("every short escape", `["\"\\\/\b\f\n\r\t"]`)
	b.add("an escaped backslash", `["\u005C"]`)
	b.add("an escaped quote", `["\u0022"]`)
	b.add("escapes in a name", `{"\u0041\n":1}`)
	b.add("an escaped astral character is written as UTF-8", `["\ud83d\ude00"]`)
	b.add("an escaped non-ASCII character is written as UTF-8", `["\u00e9\u4e2d"]`)

	b.section("string-control")
	for c := 0; c < 0x20; c++ {
		b.add(fmt.Sprintf("the control character U+%04X", c), fmt.Sprintf(`["\u%04x"]`, c))
	}
	b.add("U+007F (DEL) is not escaped", `["\u007f"]`)
	b.add("U+007F written raw", "[\"\x7f\"]")
	b.add("controls inside text", `["a\u0001b\u001fc"]`)
	b.add("control characters in names", `{"\u0001":1,"\u0000":2,"\n":3}`)

	b.section("string-html")
	b.add("<, > and &", `["<>&"]`)
	b.add("a script tag", `["</script>"]`)
	b.add("an ampersand in a name", `{"a&b":1}`)
	b.add("escaped < and >", `["\u003c\u003e\u0026"]`)

	b.section("string-line-separator")
	b.add("U+2028 written raw", "[\"\u2028\"]")
	b.add("U+2029 written raw", "[\"\u2029\"]")
	b.add("U+2028 as an escape", `["\u2028"]`)
	b.add("U+2029 as an escape", `["\u2029"]`)
	b.add("U+2028 in a name", `{"a\u2028b":1}`)

	b.section("string-non-ascii")
	b.add("a Latin-1 letter", `["é"]`)
	b.add("a decomposed letter is not normalized", `["e\u0301","é"]`)
	b.add("German, Greek and Cyrillic", `["straße","Ωμέγα","жизнь"]`)
	b.add("CJK", `["中文","日本語","한국어"]`)
	b.add("an emoji", `["😀"]`)
	b.add("an emoji sequence", `["👩‍💻","🇫🇷"]`)
	b.add("right-to-left text", `["שלום","مرحبا"]`)
	b.add("U+0080 to U+009F are not escaped", `["\u0080\u0085\u009f"]`)
	b.add("U+00A0 and U+00AD", `["\u00a0\u00ad"]`)
	b.add("U+FEFF inside a string", `["\ufeff"]`)
	b.add("U+FFFD", `["\ufffd"]`)
	b.add("U+FFFE and U+FFFF", `["\ufffe\uffff"]`)
	b.add("U+10FFFF", `["\udbff\udfff"]`)
	b.add("a non-ASCII name", `{"clé":"valeur"}`)

	b.section("string-lone-surrogate")
	b.add("a lone high surrogate", `["\ud800"]`)
	b.add("a lone low surrogate", `["\udfff"]`)
	b.add("surrogates in the wrong order", `["\udc00\ud800"]`)
	b.add("a lone surrogate between letters", `["a\ud83db"]`)
	b.add("a high surrogate at the end", `["x\udbff"]`)
	b.add("a lone surrogate escaped in upper case", `["\uDABC"]`)
	b.add("a lone surrogate after a pair", `["\ud83d\ude00\ude00"]`)
	b.add("a lone surrogate in a name", `{"\ud800":1,"a":2}`)
	b.call("a lone surrogate in the task id", "task-\xed\xa0\x80", defTool, `{}`)
	b.call("a lone surrogate in the tool name", defTask, "tool-\xed\xbf\xbf", `{}`)

	b.section("task-tool")
	b.call("a non-ASCII task id", "tâche-№1", defTool, `{}`)
	b.call("a CJK task id and tool name", "任务-42", "发送邮件", `{"a":1}`)
	b.call("an emoji tool name", defTask, "🚀launch", `{}`)
	b.call("a task id with a quote", `say "hi"`, defTool, `{}`)
	b.call("a tool name with a backslash", defTask, `C:\tools\run`, `{}`)
	b.call("a task id with a tab and a newline", "a\tb\nc", defTool, `{}`)
	b.call("a tool name with a control character", defTask, "bell\x07", `{}`)
	b.call("a tool name with dots and slashes", defTask, "github.com/repos/open_pull_request", `{}`)
	b.call("a task id with spaces", "  spaced  task  ", defTool, `{}`)
	b.call("a long task id", strings.Repeat("t", 1000), defTool, `{}`)
	b.call("a decomposed task id is not normalized", "e\u0301", defTool, `{}`)
	b.call("an astral task id", "𝄞", "🎵", `{}`)
	b.call("a task id that looks like JSON", `["x",1]`, `{"y":2}`, `[]`)
	b.call("U+0080 in a tool name", defTask, "a\u0080b", `{}`)
	b.call("a NUL in the task id", "nul\x00task", defTool, `{}`)
	b.call("a task id of one character", "x", "y", `{}`)

	b.section("nesting")
	b.add("arrays 10 levels deep", nestArrays(10))
	b.add("arrays 100 levels deep", nestArrays(100))
	b.add("arrays 500 levels deep", nestArrays(500))
	b.add("arrays 1000 levels deep", nestArrays(1000))
	b.add("objects 100 levels deep", nestObjects(100))
	b.add("objects 1000 levels deep", nestObjects(1000))
	b.add("objects and arrays 1000 levels deep", strings.Repeat(`{"b":1,"a":[`, 500)+"0"+strings.Repeat(`]}`, 500))

	b.section("large")
	b.add("1000 names in reverse order", manyMembers(1000))
	b.add("a string of 20,000 characters", `["`+strings.Repeat("é", 10000)+strings.Repeat("a", 10000)+`"]`)
	b.add("an array of 2,000 numbers", manyNumbers(2000))
	b.add("1000 array-index names in reverse order", manyIndexMembers(1000))

	b.section("invalid-json")
	b.add("a trailing comma in an object", `{"a":1,}`)
	b.add("a trailing comma in an array", `[1,]`)
	b.add("a leading zero", `{"a":01}`)
	b.add("NaN", `[NaN]`)
	b.add("Infinity", `[Infinity]`)
	b.add("-Infinity", `[-Infinity]`)
	b.add("single quotes", `{'a':1}`)
	b.add("an unquoted name", `{a:1}`)
	b.add("a missing comma", `[1 2]`)
	b.add("a plus sign", `[+1]`)
	b.add("a number starting with a point", `[.5]`)
	b.add("a number ending with a point", `[1.]`)
	b.add("an invalid escape", `["\x41"]`)
	b.add("a raw tab in a string", "[\"a\tb\"]")
	b.add("a comment", `[1]/*c*/`)
	b.add("a missing colon", `{"a" 1}`)
	b.add("an exponent without digits", `[1e]`)
	b.add("a hexadecimal number", `[0x10]`)
	b.add("trailing data after the value", `[1] 2`)
	b.add("a short unicode escape", `["\u12"]`)
	b.add("a misspelt literal", `[nul]`)

	// Append new cases here, whatever their rule (see the comment at the top).
	return b.cases
}

func nestArrays(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func nestObjects(n int) string {
	return strings.Repeat(`{"b":1,"a":`, n) + "null" + strings.Repeat("}", n)
}

func manyMembers(n int) string {
	var s strings.Builder
	s.WriteByte('{')
	for i := n - 1; i >= 0; i-- {
		if i != n-1 {
			s.WriteByte(',')
		}
		fmt.Fprintf(&s, `"k%d":%d`, i, i)
	}
	s.WriteByte('}')
	return s.String()
}

func manyIndexMembers(n int) string {
	var s strings.Builder
	s.WriteByte('{')
	for i := n - 1; i >= 0; i-- {
		fmt.Fprintf(&s, `"%d":%d,`, i, i)
	}
	s.WriteString(`"x":0}`)
	return s.String()
}

func manyNumbers(n int) string {
	var s strings.Builder
	s.WriteByte('[')
	x := uint64(12345)
	for i := 0; i < n; i++ {
		if i > 0 {
			s.WriteByte(',')
		}
		x = x*6364136223846793005 + 1442695040888963407
		switch i % 4 {
		case 0:
			s.WriteString(strconv.FormatUint(x>>40, 10))
		case 1:
			fmt.Fprintf(&s, "%d.%d", x>>50, x%1000)
		case 2:
			fmt.Fprintf(&s, "%de%d", x>>54, int(x%40)-20)
		default:
			fmt.Fprintf(&s, "-%d.%03de-%d", x>>60, x%1000, x%9)
		}
	}
	s.WriteByte(']')
	return s.String()
}

-- What follows reads the tables above; it is the same in every plugin kidscope writes.

local f_kafka = Field.new("kafka")
local f_request_key = Field.new("kafka.request_key")
local f_stream = Field.new("tcp.stream")
local f_comment = Field.new("frame.comment")

-- Requests awaiting their response, per TCP stream, oldest first (as the
-- decoder's pending set: a response takes its request and every older
-- one), filled on the first pass; what each response was matched to,
-- kept by frame and message so that a second pass finds it again.
local pending = {}
local matched = {}
local sasl, tokens

function proto.init()
	pending = {}
	matched = {}
	sasl = {}
	tokens = {}
end

local B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

-- kafka_uuid writes 16 bytes as Kafka does: URL-safe base64, no padding.
local function kafka_uuid(r)
	local out = {}
	local bytes = {}
	for i = 0, 15 do
		bytes[#bytes + 1] = r:range(i, 1):uint()
	end
	for i = 1, 16, 3 do
		local a, b, c = bytes[i], bytes[i + 1], bytes[i + 2]
		local n = a * 65536 + (b or 0) * 256 + (c or 0)
		local chars = 4
		if b == nil then chars = 2 elseif c == nil then chars = 3 end
		for k = 1, chars do
			local shift = 18 - 6 * (k - 1)
			local v = math.floor(n / 2 ^ shift) % 64
			out[#out + 1] = B64:sub(v + 1, v + 1)
		end
	end
	return table.concat(out)
end

-- A reader over one Kafka message: r is the message's range (its 4-byte
-- length included), off the next byte to read. Every read checks that the
-- bytes are there and says nil when they are not.
local function reader(r)
	return {r = r, off = 0, n = r:len()}
end

local function take(rd, n)
	if n < 0 or rd.off + n > rd.n then
		return nil
	end
	local rg = rd.r:range(rd.off, n)
	rd.off = rd.off + n
	return rg
end

local function uvarint(rd)
	local v, mul = 0, 1
	for _ = 1, 10 do
		if rd.off >= rd.n then
			return nil
		end
		local b = rd.r:range(rd.off, 1):uint()
		rd.off = rd.off + 1
		v = v + (b % 128) * mul
		if b < 128 then
			return v
		end
		mul = mul * 128
	end
	return nil
end

-- tags passes over a tagged-field section; it returns the count, and the
-- range of tag 0 when it is 16 bytes long (the header's instance ID).
local function tags(rd)
	local count = uvarint(rd)
	if count == nil then
		return nil
	end
	local tag0
	for _ = 1, count do
		local tag = uvarint(rd)
		local size = tag and uvarint(rd)
		local data = size and take(rd, size)
		if data == nil then
			return nil
		end
		if tag == 0 and size == 16 then
			tag0 = data
		end
	end
	return count, tag0
end

-- header_versions returns the request and response header versions of
-- key and version, and whether the table knows the version (only then are
-- bodies read).
local function header_versions(key, version)
	local api = APIS[key]
	if api == nil then
		return 1, 0, false
	end
	local first, last = api[2], api[3]
	if version >= first and version <= last then
		local i = version - first + 1
		return tonumber(api[4]:sub(i, i)), tonumber(api[5]:sub(i, i)), true
	end
	if version > last then
		return api[6], 0, false
	end
	return 1, 0, false
end

local function add_uuid(tree, stem, rg)
	tree:add(pf[stem .. "_id"], rg, kafka_uuid(rg))
	tree:add(pf[stem .. "_uuid"], rg)
end

local function add_string(tree, name, rg)
	if rg:len() == 0 then
		tree:add(pf[name], rg, "")
	else
		tree:add_packet_field(pf[name], rg, ENC_UTF_8 + ENC_NA)
	end
end

-- read_string reads a string (compact in flexible versions): its range,
-- or false for null; nil when the bytes run out.
local function read_string(rd, flexible)
	local len
	if flexible then
		len = uvarint(rd)
		if len == nil then
			return nil
		end
		len = len - 1
	else
		local rg = take(rd, 2)
		if rg == nil then
			return nil
		end
		len = rg:int()
	end
	if len < 0 then
		return false
	end
	return take(rd, len)
end

-- read_count reads the length of bytes or an array (compact in flexible
-- versions), with the range of the length itself; -1 for null.
local function read_count(rd, flexible)
	local start = rd.off
	local n
	if flexible then
		n = uvarint(rd)
		if n == nil then
			return nil
		end
		n = n - 1
	else
		local rg = take(rd, 4)
		if rg == nil then
			return nil
		end
		n = rg:int()
	end
	return n, rd.r:range(start, rd.off - start)
end

-- read_body reads the slots of a body layout into a list of items to add,
-- or returns nil and why it could not.
local function read_body(rd, layout, version, flexible)
	local items = {}
	for _, s in ipairs(layout) do
		local name, kind, from, to = s[1], s[2], s[3], s[4]
		if version >= from and (to < 0 or version <= to) then
			if kind == "i8" or kind == "i16" or kind == "i32" or kind == "bool" then
				local size = ({i8 = 1, i16 = 2, i32 = 4, bool = 1})[kind]
				local rg = take(rd, size)
				if rg == nil then
					return nil, name ~= "" and name or kind
				end
				if kind == "bool" then
					items[#items + 1] = {name, rg, rg:uint() ~= 0}
				else
					items[#items + 1] = {name, rg, rg:int()}
				end
			elseif kind == "uuid" then
				local rg = take(rd, 16)
				if rg == nil then
					return nil, name
				end
				items[#items + 1] = {name, rg, "uuid"}
			elseif kind == "str" then
				local rg = read_string(rd, flexible)
				if rg == nil then
					return nil, name ~= "" and name or "string"
				end
				if rg then
					items[#items + 1] = {name, rg, "string"}
				end
			elseif kind == "bytes" then
				local n, lenrg = read_count(rd, flexible)
				if n == nil or (n > 0 and take(rd, n) == nil) then
					return nil, name
				end
				-- The length, pointing at the length prefix: the bytes
				-- themselves (telemetry metrics) are never shown.
				items[#items + 1] = {name, lenrg, math.max(n, 0)}
			elseif kind == "i8s" or kind == "strs" then
				local n = read_count(rd, flexible)
				if n == nil then
					return nil, name
				end
				for _ = 1, n do
					if kind == "i8s" then
						local rg = take(rd, 1)
						if rg == nil then
							return nil, name
						end
						items[#items + 1] = {name, rg, rg:int()}
					else
						local rg = read_string(rd, flexible)
						if rg == nil then
							return nil, name
						end
						if rg then
							items[#items + 1] = {name, rg, "string"}
						end
					end
				end
			end
		end
	end
	if layout.whole then
		if flexible and tags(rd) == nil then
			return nil, "tagged fields"
		end
		if rd.off ~= rd.n then
			return nil, (rd.n - rd.off) .. " bytes after the last field"
		end
	end
	return items
end

local function add_items(tree, items)
	for _, it in ipairs(items) do
		local name, rg, v = it[1], it[2], it[3]
		if name ~= "" then
			if v == "uuid" then
				add_uuid(tree, name, rg)
			elseif v == "string" then
				add_string(tree, name, rg)
			else
				tree:add(pf[name], rg, v)
			end
		end
	end
end

local function body(tree, rd, key, version, response, flexible)
	local layout = BODIES[key .. (response and "/response" or "/request")]
	if layout == nil or version > layout.max then
		return
	end
	local items, why = read_body(rd, layout, version, flexible)
	if items == nil then
		tree:add_proto_expert_info(ex["malformed"], "the body does not parse: " .. why)
		return
	end
	add_items(tree, items)
end

local function api_label(key, version)
	local api = APIS[key]
	local name = api and api[1] or ("Unknown(" .. key .. ")")
	return name, name .. " v" .. version
end

-- plausible_client_id mirrors the decoder's test of a header read while
-- SASL tokens may follow: UTF-8 without control characters.
local function plausible_client_id(cid)
	if not cid then
		return true
	end
	local s = cid:bytes():raw()
	local i, n = 1, #s
	while i <= n do
		local b = s:byte(i)
		local extra
		if b < 0x20 or b == 0x7f then
			return false
		elseif b < 0x80 then
			extra = 0
		elseif b >= 0xc2 and b <= 0xdf then
			extra = 1
		elseif b >= 0xe0 and b <= 0xef then
			extra = 2
		elseif b >= 0xf0 and b <= 0xf4 then
			extra = 3
		else
			return false
		end
		for k = 1, extra do
			local c = s:byte(i + k)
			if c == nil or c < 0x80 or c > 0xbf then
				return false
			end
		end
		i = i + extra + 1
	end
	return true
end

-- read_request_header reads a request header as the decoder does; h.err
-- says why it could not.
local function read_request_header(rg)
	local rd = reader(rg)
	rd.off = 4
	local head = take(rd, 8)
	if head == nil then
		return nil
	end
	local h = {rd = rd, head = head, key = head:range(0, 2):int(), version = head:range(2, 2):int(), corr = head:range(4, 4):int()}
	h.hv, _, h.known = header_versions(h.key, h.version)
	if h.hv == 0 then
		return h
	end
	h.cid = read_string(rd, false)
	if h.cid == nil then
		h.err = "the client ID runs past the message"
		return h
	end
	if h.hv >= 2 then
		h.count, h.tag0 = tags(rd)
		if h.count == nil then
			h.err = "the header's tagged fields run past the message"
		end
	end
	return h
end

-- SASL tokens: after a successful SaslHandshake v0 a connection sends raw
-- tokens in size-prefixed frames, which Wireshark takes for Kafka
-- messages. As in the decoder, they last until a request reads as a real
-- one again; the plugin names them and shows none of their bytes.
sasl, tokens = {}, {}

local function token(tree, rg)
	tree:add(proto, rg, "kidscope: SASL token (its bytes are not shown)")
end

local function request(tree, rg, stream, pinfo, slot)
	local h = read_request_header(rg)
	if h == nil then
		return
	end
	if not pinfo.visited and sasl[stream] then
		if h.err or not h.known or not plausible_client_id(h.cid) then
			tokens[slot] = true
		else
			sasl[stream] = nil
		end
	end
	if tokens[slot] then
		token(tree, rg)
		return
	end
	local rd, head, key, version, hv = h.rd, h.head, h.key, h.version, h.hv
	local name, label = api_label(key, version)
	local t = tree:add(proto, rg, "kidscope: " .. label .. " request")
	t:add(pf["api_key"], head:range(0, 2))
	t:add(pf["api_name"], head:range(0, 2), name)
	t:add(pf["api_version"], head:range(2, 2))
	t:add(pf["correlation_id"], head:range(4, 4))
	t:add(pf["header_version"], hv)
	if not pinfo.visited then
		local list = pending[stream]
		if list == nil then
			list = {}
			pending[stream] = list
		end
		list[#list + 1] = {h.corr, key, version, pinfo.number}
	end
	if h.cid then
		add_string(t, "client_id", h.cid)
	end
	if h.count then
		t:add(pf["tagged_fields"], h.count)
	end
	if h.tag0 then
		add_uuid(t, "instance", h.tag0)
		t:append_text(", instance ID " .. kafka_uuid(h.tag0))
	end
	if h.err then
		t:add_proto_expert_info(ex["malformed"], h.err)
	elseif h.known and hv > 0 then
		body(t, rd, key, version, false, hv >= 2)
	end
end

local function response(tree, rg, stream, pinfo, slot)
	local rd = reader(rg)
	rd.off = 4
	local c = take(rd, 4)
	if c == nil then
		return
	end
	local corr = c:int()
	local req = matched[slot]
	if req == nil and not pinfo.visited then
		req = false
		local list = pending[stream]
		if list ~= nil then
			for i, p in ipairs(list) do
				if p[1] == corr then
					req = p
					local rest = {}
					for j = i + 1, #list do
						rest[#rest + 1] = list[j]
					end
					pending[stream] = rest
					break
				end
			end
		end
		matched[slot] = req
		if not req and sasl[stream] then
			tokens[slot] = true
		end
	end
	if tokens[slot] then
		token(tree, rg)
		return
	end
	if not req then
		local t = tree:add(proto, rg, "kidscope: response to no request seen")
		t:add(pf["correlation_id"], c)
		return
	end
	local key, version = req[2], req[3]
	local hv, rhv, known = header_versions(key, version)
	local name, label = api_label(key, version)
	local t = tree:add(proto, rg, "kidscope: " .. label .. " response")
	t:add(pf["api_key"], key):set_generated()
	t:add(pf["api_name"], name):set_generated()
	t:add(pf["api_version"], version):set_generated()
	t:add(pf["correlation_id"], c)
	t:add(pf["header_version"], rhv)
	t:add(pf["request_frame"], req[4]):set_generated()
	if rhv == 1 and tags(rd) == nil then
		t:add_proto_expert_info(ex["malformed"], "the header's tagged fields run past the message")
		return
	end
	if not known then
		return
	end
	if key == SASL_HANDSHAKE and version == 0 and not pinfo.visited then
		local code = take(rd, 2)
		if code and code:int() == 0 then
			sasl[stream] = true
		end
		return
	end
	body(t, rd, key, version, true, hv >= 2)
end

-- findings turns the packet comments analyze --annotate wrote ("kidscope
-- SEVERITY RULE …") into expert information of that severity.
local function findings(tree, tvb)
	for _, c in ipairs({f_comment()}) do
		local text = c.value
		local severity, rule, rest = text:match("^kidscope (%a+) ([%w%-]+)(.*)$")
		local e = severity and ex["finding." .. severity]
		if e then
			local t = tree:add(proto, tvb:range(0, 0), "kidscope finding: " .. severity .. " " .. rule)
			t:add(pf["finding.rule"], rule)
			t:add(pf["finding.severity"], severity)
			local role = rest:match("^: the ([%w%-]+) frame of the finding at ")
			if role then
				t:add(pf["finding.role"], role)
			end
			local known = RULES[rule]
			if known then
				t:add(pf["finding.summary"], known[2])
			end
			-- One message per rule (Wireshark's Expert Information groups
			-- by message): its summary; on a related frame, what the frame
			-- is to the finding. The comment itself says the rest.
			if role or not known then
				t:add_proto_expert_info(e, rule .. rest)
			else
				t:add_proto_expert_info(e, rule .. ": " .. known[2])
			end
			if not known then
				t:add_proto_expert_info(ex["finding.unknown_rule"],
					"rule " .. rule .. " is not in this plugin's catalogue (kidscope " .. KIDSCOPE_VERSION .. "): generate the plugin again")
			end
		end
	end
end

function proto.dissector(tvb, pinfo, tree)
	findings(tree, tvb)
	local pdus = {f_kafka()}
	if #pdus == 0 then
		return
	end
	-- One frame carries one direction: the Kafka dissector names requests
	-- by their API key, responses have none.
	local is_request = #{f_request_key()} > 0
	local stream = f_stream()
	stream = stream and stream.value or -1
	for i, fi in ipairs(pdus) do
		local rg = fi.range
		if rg ~= nil and rg:len() >= 8 then
			local slot = pinfo.number .. "/" .. i
			if is_request then
				request(tree, rg, stream, pinfo, slot)
			else
				response(tree, rg, stream, pinfo, slot)
			end
		end
	end
end

register_postdissector(proto)

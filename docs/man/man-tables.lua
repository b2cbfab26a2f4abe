-- SPDX-License-Identifier: MIT
--
-- pandoc filter for the roff man pages (docs/Makefile.inc).
--
-- A Markdown table with a line longer than pandoc's 72 columns becomes a
-- tbl table whose column widths add up to the whole text width, and tbl
-- then puts 3 ens between columns: a table of three or more columns is
-- wider than man's line, and man (and lintian) warn "table wider than line
-- width".  Shrink such tables so the gaps fit too: each gap takes 5% of
-- the width from the columns, which keep their proportions.
--
-- tbl also warns "table text block will not fit on one page" when a
-- table's cells (pandoc makes each a text block) start near the foot of
-- man's page: so every table asks for room for all its rows first (.ne),
-- and one that does not fit starts on the next page.
local function need(tbl)
	local rows = 0
	for _, body in ipairs(tbl.bodies) do
		rows = rows + #body.body
	end
	rows = rows + #tbl.head.rows
	return pandoc.RawBlock('man', string.format('.ne %dv', 2 * rows + 2))
end

local function shrink(tbl)
	local n = #tbl.colspecs
	local sum = 0
	for _, cs in ipairs(tbl.colspecs) do
		-- a column without a relative width: pandoc sizes it itself
		if type(cs[2]) ~= 'number' then
			return nil
		end
		sum = sum + cs[2]
	end
	local room = 1 - 0.05 * (n - 1)
	if sum <= room then
		return nil
	end
	for i, cs in ipairs(tbl.colspecs) do
		tbl.colspecs[i] = { cs[1], cs[2] * room / sum }
	end
	return tbl
end

function Table(tbl)
	return { need(tbl), shrink(tbl) or tbl }
end

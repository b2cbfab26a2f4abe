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
function Table(tbl)
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

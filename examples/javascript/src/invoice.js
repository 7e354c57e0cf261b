'use strict';

// Invoice totals. Amounts are integer cents; a discount and VAT are given
// in percent, and VAT is charged on the discounted amount.

function subtotal(lines) {
  return lines.reduce((sum, line) => sum + line.unitCents * line.qty, 0);
}

function applyDiscount(cents, percent) {
  return Math.round(cents - cents * percent);
}

function total(lines, { discountPercent = 0, vatPercent = 0 } = {}) {
  const discounted = applyDiscount(subtotal(lines), discountPercent);
  return Math.round(discounted * (1 + vatPercent / 100));
}

module.exports = { subtotal, applyDiscount, total };

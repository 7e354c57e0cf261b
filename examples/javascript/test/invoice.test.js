const { describe, it } = require('node:test');
const assert = require('node:assert/strict');
const { subtotal, applyDiscount, total } = require('../src/invoice');
const { formatCents } = require('../src/format');

const lines = [
  { sku: 'pen', unitCents: 250, qty: 4 },
  { sku: 'notebook', unitCents: 1200, qty: 1 },
];

describe('invoice', () => {
  it('sums line items', () => {
    assert.equal(subtotal(lines), 2200);
  });

  it('applies a discount in percent', () => {
    assert.equal(applyDiscount(2200, 10), 1980);
  });

  it('charges VAT on the discounted amount', () => {
    assert.equal(total(lines, { discountPercent: 10, vatPercent: 20 }), 2376);
  });

  it('is the subtotal without discount or VAT', () => {
    assert.equal(total(lines), 2200);
  });
});

describe('formatCents', () => {
  it('groups thousands and keeps two decimals', () => {
    assert.equal(formatCents(123450), 'EUR 1,234.50');
    assert.equal(formatCents(-5, 'USD'), '-USD 0.05');
  });
});

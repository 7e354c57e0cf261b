'use strict';

// formatCents renders an amount of cents for people: "EUR 1,234.50".
function formatCents(cents, currency = 'EUR') {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const units = Math.floor(abs / 100).toLocaleString('en-US');
  const rest = String(abs % 100).padStart(2, '0');
  return `${sign}${currency} ${units}.${rest}`;
}

module.exports = { formatCents };

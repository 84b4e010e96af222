"""What the tests share: real servers on loopback (sandbox, portal, shop, SMTP, slow peers),
factories of the portal's rows, forms and sign-in, browsers, and the hostile portal."""
